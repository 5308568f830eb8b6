"""Work `ncuh profile` does in child processes, so the orchestrating process stays small.

    python -m harness.profile.worker environment [NCU] [--no-cuda] [--pci-bus-id ID] [--list-gpus]
        one JSON line: the environment (`harness.gpu.env.collect_environment`), with the
        version of the ncu at path NCU (the one that ran), asked once; `--no-cuda` leaves
        CuPy and CUDA alone (the runner reported those fields) and asks NVML or nvidia-smi
        about the device at bus ID; `--list-gpus` adds every GPU of the host under `gpus`
    python -m harness.profile.worker metrics OUT.csv LABEL=REPORT [LABEL=REPORT ...] [--jobs N]
                                     [--after FILE]
        the tidy export of every report, a `label` column first, written atomically; with
        `--after`, started before the report exists: it imports what it needs, then waits for
        FILE to say `go [JOBS]` (or `skip`)

`ncuh profile` starts the environment child beside its first ncu and one metrics child per
report as soon as that report is written (`harness.profile.post`): nothing heavy (CuPy, NVML,
a second ncu start) waits in front of ncu, and little after it. The
environment child then starts no CUDA at all: initialising it after ncu was, with CuPy's
import, the slowest step of post-processing, and the runner under ncu reports those fields.

Why children: the orchestrator must survive whatever CUDA (CuPy) and NVIDIA's `ncu_report`
module do in-process. A crash there (a segfault in a native library) then fails one step,
which is recorded in the manifest, instead of killing ncuh with a half-built run directory.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError

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
    keeps a derived metric's unit per process, the first report's definition winning (a
    session-9 `pages` report's `derived__memory_l2_theoretical_sectors_global_excessive` is in
    bytes, a `full` one's in sectors), so no process reads two reports. The children are forked, so
    the calling process must not have read a report itself: this worker's own process and
    `ncuh export` read none before.
    """
    import shutil
    import tempfile

    from harness.report.reportfile import EXPORT_COLUMNS
    from harness.util.atomic import atomic_path

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
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            return list(pool.map(_export_part, tasks))
    except BrokenProcessPool:
        raise NcuhError(f"{tasks[0].report}: exporting it crashed (in ncu_report)") from None


def _export_part(task: _Part) -> tuple[Path, int]:
    """Export one slice of one report to a temporary CSV (no header); return it and its rows."""
    import csv
    import tempfile

    from harness.report.reportfile import export_columns

    columns = export_columns(task.report, kernel_regex=task.kernel_regex, part=task.part)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline="", dir=task.folder, suffix=".csv", delete=False
    ) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerows(zip([task.label] * len(columns), *columns.columns(), strict=True))
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
        print(f"ncuh-worker: {error}", file=sys.stderr, flush=True)
        return 2
    print(RESULT_PREFIX + json.dumps({"rows": rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
