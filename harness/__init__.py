"""ncuh: an Nsight Compute harness for iterative CUDA kernel optimization.

Each stage is a package and data flows one way (docs/architecture.md): project (ncuh.toml) ->
gpu (compile or call, verify, time, bench, tune, runner) -> profile (ncu) -> run directory ->
report -> findings -> pages, diff. Importing the package does no work: GPU and plotting
libraries load only when used.
`harness.load` and `harness.bench` are the Python API (`harness.api`, which also has
`profile`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"

# The public Python API (`harness.api`), loaded on first use so `import harness` stays cheap.
# `profile` is not among them: `harness.profile` is the package that runs ncu, and it would
# shadow the function once imported; `from harness.api import profile`.
_API = ("Result", "bench", "load")


def __getattr__(name: str) -> Any:
    if name in _API:
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def lazy_face(package: str, homes: Mapping[str, str | tuple[str, str]]
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package face's `__getattr__` and `__dir__`: each public name is imported from its
    home module (`"module"`, or `("module", "attribute")`) on first use, so importing the
    package does no work; not cached, so a test that replaces the attribute there is seen."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (home, name) if isinstance(home, str) else home
        return getattr(importlib.import_module(module), attribute)

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *homes])

    return __getattr__, __dir__
