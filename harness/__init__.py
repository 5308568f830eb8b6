"""ncuh: an Nsight Compute harness for iterative CUDA kernel optimization.

Each stage is a package and data flows one way (docs/architecture.md): project (ncuh.toml) ->
gpu (compile or call, verify, time, bench, tune, runner) -> profile (ncu) -> run directory ->
report -> findings -> pages, diff. Importing the package does no work: GPU and plotting
libraries load only when used.
"""

from __future__ import annotations

__version__ = "0.1.0"
