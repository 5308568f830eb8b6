"""The names of a run directory's files and schemas (`harness.rundir` describes the layout).

Apart from `harness.rundir.manifest` so that the writers (`ncuh profile`) name the files without
importing the readers, whose pydantic models cost a start-up that `ncuh profile` pays before
ncu runs.
"""

from pathlib import Path

MANIFEST = "manifest.json"
BENCH = "bench.json"
METRICS = "metrics.csv"
RUN_SCHEMA = "ncuh.run/2"  # what `ncuh profile` writes: /1 and a program's `ranking` (--top)
RUN_SCHEMAS = ("ncuh.run/1", RUN_SCHEMA)  # what the readers take
BENCH_SCHEMA = "ncuh.bench/1"


def is_run_directory(path: Path) -> bool:
    """A folder holding a manifest: what a command taking a run or a report is given."""
    return path.is_dir() and (path / MANIFEST).is_file()
