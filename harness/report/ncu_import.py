"""Import NVIDIA's `ncu_report` module, wherever it is.

Preferred: the installed PyPI package `ncu-report`. Otherwise the copy that ships with Nsight
Compute in `<install root>/extras/python` (install roots from `harness.util.ncu_locate`). When
neither exists the user gets one line naming both ways to get it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from harness.errors import NcuReportUnavailableError
from harness.util import ncu_install_dirs

MODULE_NAME = "ncu_report"


def _shipped_python_dirs() -> list[Path]:
    """`extras/python` directories of the installed Nsight Compute versions that hold the module."""
    dirs = []
    for root in ncu_install_dirs():
        candidate = root / "extras" / "python"
        if (candidate / f"{MODULE_NAME}.py").is_file() or (candidate / MODULE_NAME).is_dir():
            dirs.append(candidate)
    return dirs


def import_ncu_report() -> ModuleType:
    """Return the `ncu_report` module or raise `NcuReportUnavailableError`."""
    cached = sys.modules.get(MODULE_NAME)
    if cached is not None:
        return cached
    try:
        return importlib.import_module(MODULE_NAME)
    except ImportError:
        pass

    tried: list[str] = []
    for directory in _shipped_python_dirs():
        tried.append(str(directory))
        sys.path.insert(0, str(directory))
        try:
            return importlib.import_module(MODULE_NAME)
        except ImportError:
            # A broken or foreign-architecture copy: undo the path change, try the next one.
            sys.path.remove(str(directory))
            sys.modules.pop(MODULE_NAME, None)

    where = f" (tried {', '.join(tried)})" if tried else ""
    raise NcuReportUnavailableError(
        "the ncu_report Python module is not available"
        f"{where}: run `pip install ncu-report`, or install Nsight Compute "
        "(its extras/python holds ncu_report) and put ncu on PATH or set NCU_HOME"
    )
