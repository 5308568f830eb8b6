"""ncuh: an Nsight Compute harness for iterative CUDA kernel optimization.

Each stage is a package and data flows one way (docs/architecture.md): project (ncuh.toml) ->
gpu (compile or call, verify, time, bench, tune, runner) -> profile (ncu) -> run directory ->
report -> findings -> pages, diff. Importing the package does no work: GPU and plotting
libraries load only when used.
`harness.load` and `harness.bench` are the Python API (`harness.api`, which also has
`profile`).
"""

from __future__ import annotations

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
