"""The history of runs: a store (SQLite or PostgreSQL), trends per kernel, explained steps.

    from harness.history import add_runs, open_store, build_trends, write_trends
    store = open_store(create=True)              # --store / $NCUH_HISTORY / .ncuh/history.sqlite
    add_runs(store, ["runs/current"])            # at the commit git or CI names
    write_trends(build_trends(store.runs()), Path("site"))

`changes.series_steps` finds a series' change points and explains each with diff;
`check_runs` judges the newest run against its series and returns a diff result.
"""

from harness import lazy_names

# names of modules that import jinja2, numpy, pydantic, sqlalchemy: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.history.gate": ("check_runs", "unjudged"),
    "harness.history.ingest": ("add_runs",),
    "harness.history.store": ("HistoryError", "open_store"),
    "harness.history.trends": ("build_trends", "write_trends"),
})
