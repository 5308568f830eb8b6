"""Work `ncuh profile` does in child processes, so the orchestrating process stays small.

    python -m harness.profile.worker environment [NCU] [--no-cuda] [--pci-bus-id ID] [--list-gpus]
    python -m harness.profile.worker metrics OUT.csv LABEL=REPORT [...] [--jobs N] [--after FILE]

`environment` prints one JSON line (`harness.gpu.env.collect_environment`, the version of the
ncu that ran, every GPU with `--list-gpus`); `metrics` writes the tidy export of every report
atomically, and with `--after` imports first and waits for FILE to say `go [JOBS]` or `skip`.
A crash of CUDA or `ncu_report` in a child fails one step, recorded in the manifest, instead of
killing ncuh with a half-built run directory.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError, printable
from harness.util import pause_at

if TYPE_CHECKING:
    import argparse

    from harness.gpu.env import CommandRunner

RESULT_PREFIX = "ncuh-worker-result: "


def environment(
    ncu: str | None, runner: CommandRunner | None = None, *, cuda: bool = True,
    pci_bus_id: str | None = None,
) -> dict[str, Any]:
    """`collect_environment()`, with the version of `ncu` (the executable that ran).

    `ncu --version` is a slow binary start (about half a second), so it is asked exactly once,
    of the given ncu rather than of whatever `ncu` is on PATH, and started before CuPy and NVML
    load so that its start-up overlaps theirs.
    """
    from harness.gpu.env import collect_environment, parse_ncu_version
    from harness.gpu.env import run_command as default_runner

    run = runner or default_runner
    version: concurrent.futures.Future[str | None] | None = None
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        if ncu:
            version = pool.submit(run, [ncu, "--version"])
        # collect_environment would ask the `ncu` on PATH again: that answer comes from above.
        env = collect_environment(
            lambda argv: None if list(argv[:1]) == ["ncu"] else run(argv),
            cuda=cuda, pci_bus_id=pci_bus_id)
        env["ncu_path"] = ncu
        env["ncu_version"] = parse_ncu_version(version.result()) if version else None
    return env


def metrics(out: Path, pairs: Sequence[tuple[str, Path]], jobs: int | None = None,
            kernel_regex: str | None = None) -> int:
    """Write the tidy export of every report, a `label` column first; return the row count.

    Streamed with the csv module from `export_columns` (as `ncuh export` does): no pandas,
    which would add about a second to every `ncuh profile`. The export is split into `jobs`
    (default: up to 8, one per core) contiguous parts holding about as many rows each, written
    by forked processes at once, then joined in order. A 4096 `--set full` report of one
    kernel is about 150,000 rows: 1.15 s in one process, 0.53 s in 8 parts on the H100
    machine; each part still opens the whole report, which bounds the gain.

    Several reports are exported one after another, each in children of its own: ncu_report
    keeps a derived metric's unit per process, the first report's definition winning (an
    earlier `pages` report's `derived__memory_l2_theoretical_sectors_global_excessive` is in
    bytes, a `full` one's in sectors), so no process reads two reports. The children are forked, so
    the calling process must not have read a report itself: this worker's own process and
    `ncuh export` read none before.
    """
    import shutil
    import tempfile

    from harness.atomic import atomic_path
    from harness.report.reportfile import EXPORT_COLUMNS

    jobs = jobs or min(8, os.cpu_count() or 1)
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

    label: str
    report: Path
    part: tuple[int, int]  # (index, count)
    folder: Path  # where its temporary CSV goes
    kernel_regex: str | None = None


def _run_parts(tasks: list[_Part], jobs: int, *, in_this_process: bool
               ) -> list[tuple[Path, int]]:
    """One report's parts, in children (forked) unless there is one job and this process may
    read the report itself (it reads no other)."""
    if in_this_process and (jobs <= 1 or len(tasks) <= 1):
        return [_export_part(task) for task in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # fork: the children start at once, with this process's imports already done
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                               initializer=_leave_signals_to_the_parent)
    try:
        futures = [pool.submit(_export_part, task) for task in tasks]
        pause_at("export parts")
        return [future.result() for future in futures]
    except BrokenProcessPool:
        raise NcuhError(f"{tasks[0].report}: exporting it crashed (in ncu_report)") from None
    except BaseException:
        _kill_workers(pool)  # an interrupt: no child works on, or waits, after we are gone
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _leave_signals_to_the_parent() -> None:
    """In a worker: Ctrl-C (sent to the whole process group) is the parent's to handle, and
    SIGTERM ends the worker at once (not the parent's handler, inherited by the fork)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _kill_workers(pool: Any) -> None:
    # ProcessPoolExecutor kills its workers only from Python 3.14 (kill_workers); before, its
    # processes are reached through the attribute that holds them.
    kill = getattr(pool, "kill_workers", None)
    if kill is not None:
        kill()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError):
            process.kill()


def _export_part(task: _Part) -> tuple[Path, int]:
    """Export one slice of one report to a temporary CSV (no header); return it and its rows."""
    import csv
    import tempfile

    from harness.report.export_format import spreadsheet_column, spreadsheet_text
    from harness.report.reportfile import export_columns

    columns = export_columns(task.report, kernel_regex=task.kernel_regex, part=task.part)
    label = spreadsheet_text(task.label)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline="", dir=task.folder, suffix=".csv", delete=False
    ) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerows(zip([label] * len(columns),
                             *(spreadsheet_column(c) for c in columns.columns()), strict=True))
    return Path(handle.name), len(columns)


def _parser() -> argparse.ArgumentParser:
    # Imported here: `ncuh profile` imports this module for RESULT_PREFIX alone.
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.profile.worker")
    commands = parser.add_subparsers(dest="command", required=True)
    env = commands.add_parser("environment")
    env.add_argument("ncu", nargs="?", default=None)
    env.add_argument("--no-cuda", dest="cuda", action="store_false")
    env.add_argument("--pci-bus-id", default=None)
    env.add_argument("--list-gpus", action="store_true",
                     help="also list every GPU (nvidia-smi) under 'gpus'")
    export = commands.add_parser("metrics")
    export.add_argument("out", type=Path)
    export.add_argument("pairs", nargs="*", metavar="LABEL=REPORT")
    export.add_argument("--jobs", type=int, default=None,
                        help="processes sharing the export (default: up to 8, one per core)")
    export.add_argument("--after", type=Path, default=None, metavar="FILE",
                        help="start now, export once FILE says 'go [JOBS]' ('skip': export "
                             "nothing)")
    return parser


# How often a waiting export looks for its go-ahead: a few milliseconds of latency at most.
_POLL_S = 0.005


def wait_for_go(path: Path) -> tuple[bool, int | None]:
    """Block until `path` exists; (go?, jobs) from its one line, `go [JOBS]` or `skip`.

    The export is started while ncu still writes its report, so that Python's start and the
    imports of `ncu_report` are paid beside ncu, not after it; this is how it learns when the
    report is there (a file, so any way of starting children works). It also gives up when the
    process that started it is gone.
    """
    import time

    parent = os.getppid()
    while not path.exists():
        if os.getppid() != parent:
            raise NcuhError("the profile run that started this export is gone")
        time.sleep(_POLL_S)
    words = path.read_text(encoding="utf-8").split()
    go = bool(words) and words[0] == "go"
    return go, int(words[1]) if go and len(words) > 1 else None


def _prepare_export() -> None:
    """The imports an export needs, done before its report exists."""
    from harness.report.ncu_import import import_ncu_report
    from harness.report.reportfile import export_columns  # noqa: F401

    import_ncu_report()


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "environment":
        found = environment(args.ncu, cuda=args.cuda, pci_bus_id=args.pci_bus_id)
        if args.list_gpus:
            from dataclasses import asdict

            from harness.profile.gpus import list_gpus

            found["gpus"] = [asdict(gpu) for gpu in list_gpus()]
        print(RESULT_PREFIX + json.dumps(found, default=str), flush=True)
        return 0
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
                print(RESULT_PREFIX + json.dumps({"rows": 0, "skipped": True}), flush=True)
                return 0
            jobs = jobs_now or jobs
        rows = metrics(args.out, pairs, jobs=jobs)
    except NcuhError as error:
        print(f"ncuh-worker: {printable(error)}", file=sys.stderr, flush=True)
        return 2
    print(RESULT_PREFIX + json.dumps({"rows": rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
