"""The tidy metrics export of `ncuh profile --metrics-csv`, run as a child process.

    python -m harness.report.metrics_export OUT.csv [LABEL=REPORT ...] [--jobs N] [--after FILE]
        the tidy export of every report, a `label` column first, written atomically; with
        `--after`, started before the report exists: it imports what it needs, then waits for
        FILE to say `go [JOBS]` (or `skip`)

It prints one result line after `harness.profile`'s `WORKER_RESULT_PREFIX`, as the
environment child does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import NcuhError, printable
from harness.report.export_format import spreadsheet_column, spreadsheet_text
from harness.report.ncu_import import import_ncu_report
from harness.report.reportfile import EXPORT_COLUMNS, export_columns
from harness.util import pause_at, usable_cores, worker_pool

if TYPE_CHECKING:
    import argparse


def export_metrics_csv(out: Path, pairs: Sequence[tuple[str, Path]], jobs: int | None = None,
            kernel_regex: str | None = None) -> int:
    """Write the tidy export of every report, a `label` column first; return the row count.

    Streamed with the csv module from `export_columns` (as `ncuh export` does): no pandas,
    which would add about a second to every `ncuh profile`. The export is split into `jobs`
    (default: up to 8, one per core) contiguous parts holding about as many rows each, written
    by workers at once (`harness.util.worker_pool`), then joined in order; each part
    still opens the whole report, which bounds the gain.

    Several reports are exported one after another, each in children of its own: ncu_report
    keeps a derived metric's unit per process, the first report's definition winning (an
    earlier `pages` report's `derived__memory_l2_theoretical_sectors_global_excessive` is in
    bytes, a `full` one's in sectors), so no process reads two reports: a pool per report,
    whose workers are forked from a process that has read none (this worker's own process,
    `ncuh export`), or spawned beside threads.
    """
    import shutil
    import tempfile

    from harness.util import atomic_path

    jobs = jobs or min(8, usable_cores())
    with atomic_path(out) as tmp, tempfile.TemporaryDirectory(
        dir=out.parent, prefix=".metrics-parts-"
    ) as scratch:
        parts = []
        for label, report in pairs:
            tasks = [_Part(label, report, (index, jobs), Path(scratch), kernel_regex)
                     for index in range(jobs)]
            parts += _run_parts(tasks, jobs, in_this_process=len(pairs) == 1)
        with tmp.open("w", encoding="utf-8", newline="") as stream:
            stream.write(",".join(["label", *EXPORT_COLUMNS]) + "\n")
            for part_path, _ in parts:
                with part_path.open(encoding="utf-8", newline="") as part:
                    shutil.copyfileobj(part, stream)
    return sum(rows for _, rows in parts)


@dataclass(frozen=True)
class _Part:
    """One slice of one report's export, for one process."""

    label: str | None  # None: no label column (`ncuh export` of one report)
    report: Path
    part: tuple[int, int]  # (index, count)
    folder: Path  # where its temporary CSV goes
    kernel_regex: str | None = None


def _run_parts(tasks: list[_Part], jobs: int, *, in_this_process: bool
               ) -> list[tuple[Path, int]]:
    """One report's parts, in forked workers unless there is one job (or no worker to be
    had) and this process may read the report itself (it reads no other)."""
    if in_this_process and (jobs <= 1 or len(tasks) <= 1):
        return [_export_part(task) for task in tasks]
    from concurrent.futures.process import BrokenProcessPool

    # beside threads, the parts of several reports are read by spawned workers: each report in
    # processes of its own, whatever this process read before
    with worker_pool(jobs, spawn_beside_threads=not in_this_process) as pool:
        if pool is None and in_this_process:  # no worker to be had: the parts one by one
            return [_export_part(task) for task in tasks]
        if pool is None:
            raise NcuhError(f"{tasks[0].report}: no worker process could be started to "
                            "export it apart from the other reports")
        futures = [pool.submit(_export_part, task) for task in tasks]
        pause_at("export parts")
        try:
            return [future.result() for future in futures]
        except BrokenProcessPool:
            raise NcuhError(f"{tasks[0].report}: exporting it crashed (in ncu_report)") from None


def _export_part(task: _Part) -> tuple[Path, int]:
    """Export one slice of one report to a temporary CSV (no header); return it and its rows."""
    import csv
    import tempfile

    columns = export_columns(task.report, kernel_regex=task.kernel_regex, part=task.part)
    cells = [spreadsheet_column(c) for c in columns.columns()]
    if task.label is not None:
        cells.insert(0, [spreadsheet_text(task.label)] * len(columns))
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline="", dir=task.folder, suffix=".csv", delete=False
    ) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerows(zip(*cells, strict=True))
    return Path(handle.name), len(columns)


def _prepare_export() -> None:
    """The imports an export needs, done before its report exists."""
    import_ncu_report()


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.report.metrics_export")
    parser.add_argument("out", type=Path)
    parser.add_argument("pairs", nargs="*", metavar="LABEL=REPORT")
    parser.add_argument("--jobs", type=int, default=None,
                        help="processes sharing the export (default: up to 8, one per core)")
    parser.add_argument("--after", type=Path, default=None, metavar="FILE",
                        help="start now, export once FILE says 'go [JOBS]' ('skip': export "
                             "nothing)")
    return parser


def main(argv: Sequence[str]) -> int:
    # the protocol of profile's post-processing children: only the child needs it
    from harness.profile import WORKER_RESULT_PREFIX, wait_for_go

    args = _parser().parse_args(argv)
    pairs = []
    for item in args.pairs:
        label, _, report = item.partition("=")
        pairs.append((label, Path(report)))
    try:
        jobs = args.jobs
        if args.after is not None:
            _prepare_export()
            go, jobs_now = wait_for_go(args.after)
            if not go:
                print(WORKER_RESULT_PREFIX + json.dumps({"rows": 0, "skipped": True}),
                      flush=True)
                return 0
            jobs = jobs_now or jobs
        rows = export_metrics_csv(args.out, pairs, jobs=jobs)
    except NcuhError as error:
        print(f"ncuh-worker: {printable(error)}", file=sys.stderr, flush=True)
        return 2
    print(WORKER_RESULT_PREFIX + json.dumps({"rows": rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
