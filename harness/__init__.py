"""ncuh: an Nsight Compute harness for iterative CUDA kernel optimization.

Each stage is a package and data flows one way (docs/architecture.md): project (ncuh.toml) ->
gpu (compile or call, verify, time, bench, tune, runner) -> profile (ncu) -> run directory ->
report -> findings -> pages, diff. `harness.load` and `harness.bench` are the Python API
(`harness.api`, which also has `profile`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"


def lazy_names(package: str, homes: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A package face's `__getattr__` for the names whose modules import a heavy library
    (docs/architecture.md): `homes` maps each such module to its names, imported on first
    use; not kept here, so a test that replaces a name in its module is seen."""
    module_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module_of[name]), name)

    return __getattr__


# Every module of harness runs this file first, so it imports nothing of its own: the Python
# API comes on first use. `profile` is not among these names: `harness.profile` is the package
# that runs ncu, which would shadow the function once imported; `from harness.api import profile`.
__getattr__ = lazy_names(__name__, {"harness.api": ("Result", "bench", "load")})
