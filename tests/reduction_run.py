"""The reduction chain's recorded H100 run (tests/fixtures/reduction_h100_2p26) written up
with its project, once per test process: several test modules read the same pages. The
writeup is shared: tests only read it."""

from __future__ import annotations

import functools
from pathlib import Path

from harness.pages.writeup import Writeup, collect

RUN = Path(__file__).parent / "fixtures" / "reduction_h100_2p26"
BENCH = RUN / "bench_reduction.json"
PROJECT = Path(__file__).parent.parent / "kernels" / "reduction"


@functools.cache
def reduction_writeup(with_bench: bool = True) -> Writeup:
    """The run's pages, with its bench results or (False) from ncu's durations alone."""
    return collect([RUN, BENCH] if with_bench else [RUN], project=PROJECT)
