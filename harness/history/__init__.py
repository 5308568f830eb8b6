"""The history of runs: a store (SQLite or PostgreSQL), trends per kernel, explained steps.

    from harness.history import add_runs, open_store, build_trends, write_trends
    store = open_store(create=True)              # --store / $NCUH_HISTORY / .ncuh/history.sqlite
    add_runs(store, ["runs/current"])            # at the commit git or CI names
    write_trends(build_trends(store.runs()), Path("site"))

`series_steps` finds a series' change points and explains each with diff; `check_runs`
judges the newest run against its series and returns a diff result.
"""

from __future__ import annotations

from harness import lazy_names

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
    "unjudged",
    "write_trends",
]

# names of modules that import jinja2, numpy, pydantic, sqlalchemy: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.history.changes": ("Step", "series_steps"),
    "harness.history.gate": ("check_runs", "unjudged"),
    "harness.history.ingest": ("add_runs",),
    "harness.history.record": ("KernelRecord", "RunRecord", "StoredRun", "read_run"),
    "harness.history.series": ("Series", "SeriesKey", "build_series"),
    "harness.history.steps": ("Point", "StepFound", "find_steps"),
    "harness.history.store": (
        "AddOutcome", "HistoryError", "Store", "open_store",
    ),
    "harness.history.trends": ("Trends", "build_trends", "write_trends"),
})
