"""ncuh: an Nsight Compute harness for iterative CUDA kernel optimization.

Each stage is a package or module and data flows one way (see DESIGN.md):
project (ncuh.toml) -> gpu (compile/call, verify, time, bench, tune, runner) -> profile
-> reportfile -> findings -> writeup/render, diff.
Importing the package does no work: GPU and plotting libraries load only when used.
"""

from __future__ import annotations

__version__ = "0.1.0"
