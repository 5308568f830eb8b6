"""The reduction chain's recorded H100 run (reports/runs/reduction-h100-2p26) written up with
its project, once per test process: several test modules read the same pages. The writeup is
shared: tests only read it."""

from __future__ import annotations

import functools
from pathlib import Path
from unittest import mock

from packed_fixtures import REDUCTION_RUN as RUN

from harness.pages.writeup import Writeup, collect
from harness.rundir import Run

BENCH = RUN / "bench.json"
PROJECT = Path(__file__).parent.parent / "kernels" / "reduction"


@functools.cache
def reduction_writeup(with_bench: bool = True) -> Writeup:
    """The run's pages, with its bench results or (False) from ncu's durations alone: the run
    read as one profiled without `--bench`."""
    if with_bench:
        return collect([RUN], project=PROJECT)
    with mock.patch.object(Run, "bench", lambda _run: None):
        return collect([RUN], project=PROJECT)
