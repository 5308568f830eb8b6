"""The history of runs: a store (SQLite or PostgreSQL), trends per kernel, explained steps.

`open_store` opens the store and `add_runs` records run directories at their commits;
`build_trends` and `write_trends` make the trend pages; `series_steps` finds a series'
change points and explains each with diff; `check_runs` judges the newest run against its
series and returns a diff result.
"""

from __future__ import annotations

from harness.history.changes import Step, series_steps
from harness.history.gate import check_runs
from harness.history.ingest import add_runs
from harness.history.record import KernelRecord, RunRecord, read_run
from harness.history.series import Series, SeriesKey, build_series
from harness.history.steps import Point, StepFound, find_steps
from harness.history.store import (
    AddOutcome,
    HistoryError,
    Store,
    StoredRun,
    open_store,
    store_target,
)
from harness.history.trends import Trends, build_trends, write_trends

__all__ = [
    "AddOutcome",
    "HistoryError",
    "KernelRecord",
    "Point",
    "RunRecord",
    "Series",
    "SeriesKey",
    "Step",
    "StepFound",
    "Store",
    "StoredRun",
    "Trends",
    "add_runs",
    "build_series",
    "build_trends",
    "check_runs",
    "find_steps",
    "open_store",
    "read_run",
    "series_steps",
    "store_target",
    "write_trends",
]
