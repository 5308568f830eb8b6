"""manifest.json of a profile run: its entries, the GPUs that ran them, and the timings."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.profile.entry import EntryResult
from harness.profile.gpus import Gpu, gpu_for_bus_id
from harness.profile.planning import Plan
from harness.profile.post import PostResult
from harness.rundir import BENCH, RUN_SCHEMA


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def build_manifest(
    plan_: Plan, entries: Sequence[EntryResult], *, environment: dict[str, Any], ncu: Path,
    run_dir: Path, started_at: str, finished_at: str, metrics: dict[str, Any] | None,
    bench: bool, commit: str | None, timings: dict[str, float] | None = None,
    head_start: bool = False, ranking: dict[str, Any] | None = None,
) -> dict[str, Any]:
    request = plan_.request
    ranked = {"ranking": ranking} if ranking is not None else {}
    return {
        "schema": RUN_SCHEMA,
        "ncuh_version": __version__,
        "git_commit": commit,
        "environment": environment,
        "ncu": {
            **request.settings.manifest(),
            "executable": str(ncu),
            "capture": plan_.capture if not request.program else "user",
            "command_lines": plan_.command_lines(ncu, run_dir),
            "head_start": head_start,  # each next target's ncu started early (head_start.py)
        },
        "variants": list(dict.fromkeys(t.variant for t in plan_.targets if t.variant)),
        "sizes": [list(s) for s in dict.fromkeys(t.size for t in plan_.targets if t.size)],
        "params": dict(request.params),
        "warmup": request.warmup,
        "program": list(request.program) or None,
        "started_at": started_at,
        "finished_at": finished_at,
        "entries": [entry.manifest() for entry in entries],
        "gpus": _gpus_used(entries),
        "metrics": metrics,
        "bench": BENCH if bench else None,
        "timings": timings,
        # Which project the variants came from, and what its pages show (titles, strategies,
        # work model): writeup reads them here and never loads the project again.
        "project": (plan_.project.manifest([plan_.project.size(size) for size in dict.fromkeys(
                        t.size for t in plan_.targets if t.size)])
                    if plan_.project is not None else None),
        # --top: the first pass's ranking of the program's kernels (harness.profile.two_pass)
        **ranked,
    }


def _gpus_used(entries: Sequence[EntryResult]) -> list[dict[str, Any]]:
    """Each GPU that profiled an entry, once, in the order first used."""
    seen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.gpu:
            seen.setdefault(json.dumps(entry.gpu, sort_keys=True), entry.gpu)
    return list(seen.values())


def name_gpus(entries: Sequence[EntryResult], gpus: Sequence[Gpu]) -> None:
    """Entries that ran unpinned get the GPU the probe lists at their runner's PCI bus ID."""
    for entry in entries:
        if entry.gpu is None and entry.environment:
            gpu = gpu_for_bus_id(gpus, entry.environment.get("pci_bus_id"))
            if gpu is not None:
                entry.gpu = gpu.manifest()
            elif entry.environment.get("gpu"):
                entry.gpu = {"name": entry.environment["gpu"],
                             "pci_bus_id": entry.environment.get("pci_bus_id")}


def run_timings(entries: Sequence[EntryResult], post: PostResult, started: float,
                ncu_done: float, now: float | None = None) -> dict[str, float]:
    """manifest.json's `timings`, in seconds (monotonic clock readings in, rounded out):
    the entries' ncu runs summed, the start to the last ncu's end, what post-processing left
    after it, and the whole run up to `now`."""
    now = time.monotonic() if now is None else now
    return {
        "ncu_s": round(sum(entry.seconds for entry in entries), 3),
        "ncu_wall_s": round(ncu_done - started, 3),
        "post_s": round(post.seconds, 3),
        "post_environment_s": round(post.environment_seconds, 3),
        "post_metrics_s": round(post.metrics_seconds, 3),
        "total_s": round(now - started, 3),
    }
