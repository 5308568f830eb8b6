"""The history of runs: a store (SQLite or PostgreSQL), trends per kernel, explained steps.

    from harness.history import add_runs, open_store, build_trends, write_trends
    store = open_store(create=True)              # --store / $NCUH_HISTORY / .ncuh/history.sqlite
    add_runs(store, ["runs/current"])            # at the commit git or CI names
    write_trends(build_trends(store.runs()), Path("site"))

`series_steps` finds a series' change points and explains each with diff; `check_runs`
judges the newest run against its series and returns a diff result. The names are loaded on
first use, so recording a run does not pay for matplotlib or ruptures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.history.changes import Step, series_steps
    from harness.history.gate import check_runs, unjudged
    from harness.history.ingest import add_runs
    from harness.history.record import KernelRecord, RunRecord, StoredRun, read_run
    from harness.history.series import Series, SeriesKey, build_series
    from harness.history.steps import Point, StepFound, find_steps
    from harness.history.store import (
        AddOutcome,
        HistoryError,
        Store,
        open_store,
        store_target,
    )
    from harness.history.trends import Trends, build_trends, write_trends

# public name -> the module that defines it
_HOMES: dict[str, str] = {
    "Step": "harness.history.changes",
    "series_steps": "harness.history.changes",
    "check_runs": "harness.history.gate",
    "unjudged": "harness.history.gate",
    "add_runs": "harness.history.ingest",
    "KernelRecord": "harness.history.record",
    "RunRecord": "harness.history.record",
    "read_run": "harness.history.record",
    "Series": "harness.history.series",
    "SeriesKey": "harness.history.series",
    "build_series": "harness.history.series",
    "Point": "harness.history.steps",
    "StepFound": "harness.history.steps",
    "find_steps": "harness.history.steps",
    "AddOutcome": "harness.history.store",
    "HistoryError": "harness.history.store",
    "Store": "harness.history.store",
    "StoredRun": "harness.history.record",
    "open_store": "harness.history.store",
    "store_target": "harness.history.store",
    "Trends": "harness.history.trends",
    "build_trends": "harness.history.trends",
    "write_trends": "harness.history.trends",
}

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
    "unjudged",
    "write_trends",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
