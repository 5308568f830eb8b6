"""The environment probe that `ncuh profile` runs in a child, and the go-ahead children wait for.

    python -m harness.profile.worker environment [NCU] [--no-cuda] [--pci-bus-id ID] [--list-gpus]
        one JSON line: the environment (`harness.gpu.env.collect_environment`), with the
        version of the ncu at path NCU (the one that ran), asked once; `--no-cuda` leaves
        CuPy and CUDA alone (the runner reported those fields) and asks NVML or nvidia-smi
        about the device at bus ID; `--list-gpus` adds every GPU of the host under `gpus`

The other child, the metrics export, reads reports and so lives in `harness.report`
(`python -m harness.report.metrics_export`); it prints its result after the same
`WORKER_RESULT_PREFIX` and waits for its report with `wait_for_go`. `ncuh profile` starts both
beside ncu (`harness.profile.post`). Children, because the orchestrator must survive whatever
CUDA (CuPy) and NVIDIA's `ncu_report` module do in-process: a native crash there fails one
recorded step instead of killing ncuh with a half-built run directory.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError

if TYPE_CHECKING:
    import argparse

    from harness.gpu import CommandRunner

WORKER_RESULT_PREFIX = "ncuh-worker-result: "


def environment(
    ncu: str | None, runner: CommandRunner | None = None, *, cuda: bool = True,
    pci_bus_id: str | None = None,
) -> dict[str, Any]:
    """`collect_environment()`, with the version of `ncu` (the executable that ran).

    `ncu --version` is a slow binary start (about half a second), so it is asked exactly once,
    of the given ncu rather than of whatever `ncu` is on PATH, and started before CuPy and NVML
    load so that its start-up overlaps theirs.
    """
    from harness.gpu import collect_environment, parse_ncu_version
    from harness.gpu import run_command as default_runner

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


def _parser() -> argparse.ArgumentParser:
    # Imported here: `ncuh profile` imports this module for WORKER_RESULT_PREFIX alone.
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.profile.worker")
    commands = parser.add_subparsers(dest="command", required=True)
    env = commands.add_parser("environment")
    env.add_argument("ncu", nargs="?", default=None)
    env.add_argument("--no-cuda", dest="cuda", action="store_false")
    env.add_argument("--pci-bus-id", default=None)
    env.add_argument("--list-gpus", action="store_true",
                     help="also list every GPU (nvidia-smi) under 'gpus'")
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


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    found = environment(args.ncu, cuda=args.cuda, pci_bus_id=args.pci_bus_id)
    if args.list_gpus:
        from dataclasses import asdict

        from harness.profile.gpus import list_gpus

        found["gpus"] = [asdict(gpu) for gpu in list_gpus()]
    print(WORKER_RESULT_PREFIX + json.dumps(found, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
