"""A ranked kernel's place in its program, as its page and the program's index show it.

Apart from `harness.pages.program` so that a `KernelPage` can carry it without importing the
module that builds the program's pages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProgramShare:
    """One kernel (name and launch shape) of one process, from the first pass's launches."""

    rank: int
    kernels: int  # of its process
    process: str | None  # "GPU 1 (process 4242)" where the program ran several; else None
    grid: str  # "96x1x1"
    block: str
    launches: int
    total_ms: float
    share_pct: float  # of its process's GPU time
    cumulative_pct: float
    mean_us: float
    stdev_us: float
    min_us: float
    median_us: float
    max_us: float
    process_total_ms: float
    representative_us: float  # the profiled launch's duration in the first pass
    representative_skip: int  # launches of the same name before it
    # why the report is not that launch (the second pass's count led to another launch);
    # None when it is
    mismatch: str | None = None
