"""Find an Nsight Compute installation: the `ncu` executable and its install roots.

Searched in this order: `ncu` on PATH, `$NCU_HOME`, then `/opt/nvidia/nsight-compute/<version>`
(newest version first). The profile stage runs `ncu_executable()`; `harness.report.ncu_import` looks
for the `ncu_report` module shipped under `<install root>/extras/python`.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

# Where the NVIDIA installers put versioned Nsight Compute trees (e.g. .../2025.3.1/ncu).
DEFAULT_INSTALL_GLOB_ROOT = Path("/opt/nvidia/nsight-compute")


def version_key(path: Path) -> tuple[tuple[int, ...], str]:
    """Sort key for versioned directory names: numeric parts first, so 2025.10 > 2025.9."""
    numbers = tuple(int(part) for part in re.findall(r"\d+", path.name))
    return numbers, path.name


def versioned_roots(base: Path | None = None) -> list[Path]:
    """The versioned install roots under /opt/nvidia/nsight-compute, newest first."""
    base = DEFAULT_INSTALL_GLOB_ROOT if base is None else base
    if not base.is_dir():
        return []
    roots = [child for child in base.iterdir() if child.is_dir()]
    return sorted(roots, key=version_key, reverse=True)


def ncu_install_dirs() -> list[Path]:
    """Nsight Compute install roots, most preferred first, without duplicates.

    The root is the directory that holds the `ncu` launcher (and `extras/python`). `ncu` on
    PATH is often a symlink (e.g. /usr/local/bin/ncu -> /opt/nvidia/nsight-compute/X/ncu), so
    it is resolved before taking its parent.
    """
    candidates: list[Path] = []
    on_path = shutil.which("ncu")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    ncu_home = os.environ.get("NCU_HOME")
    if ncu_home:
        candidates.append(Path(ncu_home))
    candidates.extend(versioned_roots())

    unique: list[Path] = []
    for candidate in candidates:
        if candidate not in unique:
            unique.append(candidate)
    return unique


def ncu_executable() -> Path | None:
    """The `ncu` executable to run, or None when Nsight Compute is not installed."""
    on_path = shutil.which("ncu")
    if on_path:
        return Path(on_path)
    for root in ncu_install_dirs():
        candidate = root / "ncu"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None
