"""Work `ncuh profile` does in child processes, so the orchestrating process stays small.

    python -m harness.profile.worker environment [NCU] [--no-cuda] [--pci-bus-id ID]
        one JSON line: the environment (`harness.gpu_env.collect_environment`), with the
        version of the ncu at path NCU (the one that ran), asked once; `--no-cuda` leaves
        CuPy and CUDA alone (the runner reported those fields) and asks NVML or nvidia-smi
        about the device at bus ID
    python -m harness.profile.worker metrics OUT.csv LABEL=REPORT [LABEL=REPORT ...]
        the tidy export of every report, a `label` column first, written atomically

`ncuh profile` starts both after its ncu runs and runs them at the same time: nothing heavy
(CuPy, NVML, a second ncu start) waits in front of ncu, and the two overlap each other. The
environment child then starts no CUDA at all: initialising it after ncu was, with CuPy's
import, the slowest step of post-processing, and the runner under ncu reports those fields.

Why children: the orchestrator must survive whatever CUDA (CuPy) and NVIDIA's `ncu_report`
module do in-process. A crash there (a segfault in a native library) then fails one step,
which is recorded in the manifest, instead of killing ncuh with a half-built run directory.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError

if TYPE_CHECKING:
    from harness.gpu_env import CommandRunner

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
    from harness.gpu_env import collect_environment, parse_ncu_version
    from harness.gpu_env import run_command as default_runner

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


def metrics(out: Path, pairs: Sequence[tuple[str, Path]], jobs: int | None = None) -> int:
    """Write the tidy export of every report, a `label` column first; return the row count.

    Streamed with the csv module from `export_columns` (as `ncuh export` does): no pandas,
    which would add about a second to every `ncuh profile`. The export is split into `jobs`
    (default: up to 8, one per core) contiguous parts holding about as many rows each, written
    by forked processes at once, then joined in order. A 4096 `--set full` report of one
    kernel is about 150,000 rows: 1.15 s in one process, 0.53 s in 8 parts on the H100
    machine; each part still opens the whole report, which bounds the gain.
    """
    import shutil
    import tempfile

    from harness.atomic import atomic_path
    from harness.report.reportfile import EXPORT_COLUMNS

    jobs = jobs or min(8, os.cpu_count() or 1)
    per_report = max(1, jobs // max(1, len(pairs)))
    with atomic_path(out) as tmp, tempfile.TemporaryDirectory(
        dir=out.parent, prefix=".metrics-parts-"
    ) as scratch:
        tasks = [(label, report, (index, per_report), Path(scratch))
                 for label, report in pairs for index in range(per_report)]
        parts = _run_parts(tasks, jobs)
        with tmp.open("w", encoding="utf-8", newline="") as stream:
            stream.write(",".join(["label", *EXPORT_COLUMNS]) + "\n")
            for part_path, _ in parts:
                with part_path.open(encoding="utf-8", newline="") as part:
                    shutil.copyfileobj(part, stream)
    return sum(rows for _, rows in parts)


def _run_parts(tasks: list[tuple[str, Path, tuple[int, int], Path]],
               jobs: int) -> list[tuple[Path, int]]:
    if jobs <= 1 or len(tasks) <= 1:
        return [_export_part(task) for task in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: the children start at once, with this process's imports already done
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return list(pool.map(_export_part, tasks))


def _export_part(task: tuple[str, Path, tuple[int, int], Path]) -> tuple[Path, int]:
    """Export one slice of one report to a temporary CSV (no header); return it and its rows."""
    import csv
    import tempfile

    from harness.report.reportfile import export_columns

    label, report, part, folder = task
    columns = export_columns(report, part=part)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", newline="", dir=folder, suffix=".csv", delete=False
    ) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerows(zip([label] * len(columns), *columns.columns(), strict=True))
    return Path(handle.name), len(columns)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.profile.worker")
    commands = parser.add_subparsers(dest="command", required=True)
    env = commands.add_parser("environment")
    env.add_argument("ncu", nargs="?", default=None)
    env.add_argument("--no-cuda", dest="cuda", action="store_false")
    env.add_argument("--pci-bus-id", default=None)
    export = commands.add_parser("metrics")
    export.add_argument("out", type=Path)
    export.add_argument("pairs", nargs="*", metavar="LABEL=REPORT")
    export.add_argument("--jobs", type=int, default=None,
                        help="processes sharing the export (default: up to 8, one per core)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "environment":
        found = environment(args.ncu, cuda=args.cuda, pci_bus_id=args.pci_bus_id)
        print(RESULT_PREFIX + json.dumps(found, default=str), flush=True)
        return 0
    pairs = []
    for item in args.pairs:
        label, _, report = item.partition("=")
        pairs.append((label, Path(report)))
    try:
        rows = metrics(args.out, pairs, jobs=args.jobs)
    except NcuhError as error:
        print(f"ncuh-worker: {error}", file=sys.stderr, flush=True)
        return 2
    print(RESULT_PREFIX + json.dumps({"rows": rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
