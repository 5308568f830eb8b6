"""`ncuh bench --tune`: sweep a variant's tunable space at one size, keep the fastest valid one.

A sweep enumerates the cartesian product of `Variant.tunable` (over the variant's default
`params`), rejects every configuration the variant's constraints call invalid at the size
before anything is compiled (they are counted, not tried), compiles the rest at once in
threads (NVRTC runs outside Python's lock, so a sweep's compiles take about the time of the
slowest few instead of their sum), then verifies and times each through `bench_one`; a
configuration that fails to compile or computes wrong numbers is never chosen. The winner
goes into the user's tuning cache (`harness.gpu.tuning`).
"""

from __future__ import annotations

import contextlib
import itertools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Literal

from harness.gpu.backend import prepare
from harness.gpu.bench import BenchSettings, bench_one
from harness.gpu.env import current_compute_capability, current_gpu_name, require_gpu
from harness.gpu.timing import L2Flusher
from harness.gpu.tuning import TuneCache, cache_path, source_fingerprint
from harness.project import Project, Size, Variant
from harness.util import usable_cores

CandidateStatus = Literal["rejected", "failed", "ok"]  # rejected: refused before compiling


def enumerate_configs(variant: Variant) -> Iterator[dict[str, int]]:
    """Every combination of the tunable values, each over the variant's default params."""
    names = list(variant.tunable)
    for values in itertools.product(*(variant.tunable[name] for name in names)):
        yield {**variant.params, **dict(zip(names, values, strict=True))}


@dataclass
class Candidate:
    """One configuration of a sweep and what became of it."""

    params: dict[str, int]
    status: CandidateStatus
    reason: str | None = None
    median_ms: float | None = None
    gflops: float | None = None
    rel_error: float | None = None


def sample_configs(variant: Variant, valid: Sequence[dict[str, int]], limit: int | None,
                   seed: int = 0) -> list[dict[str, int]]:
    """At most `limit` of the valid configs: the defaults first, then a seeded random sample.

    A sample spreads a short sweep over the whole space, where the first `limit` in
    enumeration order would all share the smallest block tile.
    """
    if limit is None or limit >= len(valid):
        return list(valid)
    defaults = dict(variant.params)
    first = [p for p in valid if p == defaults][:1]
    rest = [p for p in valid if p != defaults]
    picked = random.Random(seed).sample(rest, max(limit - len(first), 0))
    return (first + picked)[:limit]


def filter_configs(project: Project, variant: Variant, configs: Sequence[dict[str, int]],
                   size: Size | None) -> tuple[list[dict[str, int]], list[Candidate]]:
    """Split configs into valid ones and rejected candidates; nothing is compiled here."""
    valid: list[dict[str, int]] = []
    rejected: list[Candidate] = []
    for params in configs:
        problems = project.problems(variant, params, size)
        if problems:
            rejected.append(Candidate(params, "rejected", "; ".join(problems)))
        else:
            valid.append(params)
    return valid, rejected


def compile_ahead(project: Project, variant: Variant, size: Size,
                  configs: Sequence[dict[str, int]], workers: int | None = None) -> float:
    """Compile `variant` at `size` for every config in `workers` threads (default: one per
    CPU), so that each `bench_one` of the sweep finds its module compiled; returns the
    seconds it took. A config that fails here is left for its own `bench_one` to report.
    """
    start = time.perf_counter()
    if variant.call is not None or not configs:  # a Python launcher compiles nothing
        return 0.0
    cupy = require_gpu()
    device = cupy.cuda.Device().id

    def compile_one(params: dict[str, int]) -> None:
        # The device makes the thread's CUDA context current, to load the module. Whatever
        # fails (a compile error, the project's own macros raising) is bench_one's to record.
        with cupy.cuda.Device(device), contextlib.suppress(Exception):
            prepare(project, variant, size, params)

    pool = ThreadPoolExecutor(max_workers=workers or usable_cores())
    try:
        list(pool.map(compile_one, configs))
    finally:  # on Ctrl-C, the compiles not yet started are dropped, not waited for
        pool.shutdown(wait=True, cancel_futures=True)
    return time.perf_counter() - start


@dataclass
class TuneResult:
    """A finished sweep of one variant at one size on one GPU."""

    variant: str
    gpu: str
    size: Size
    best: Candidate | None
    candidates: list[Candidate] = field(default_factory=list)
    compile_s: float = 0.0  # compiling every valid config ahead of the timing, in threads

    def count(self, status: CandidateStatus) -> int:
        return sum(1 for c in self.candidates if c.status == status)

    @property
    def rejected(self) -> int:
        return self.count("rejected")

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def timed(self) -> int:
        return self.count("ok")


def autotune(project: Project, variant: Variant, size: Size, *, repeats: int = 10,
             warmup: int = 2, limit: int | None = None, cache: TuneCache | None = None,
             save: bool = True, compile_workers: int | None = None,
             progress: Callable[[Candidate], None] | None = None) -> TuneResult:
    """Sweep `variant.tunable` at `size` on the current GPU; cache and return the winner.

    `limit` caps how many valid configurations are compiled (the defaults plus a seeded
    sample, see `sample_configs`); `compile_workers` threads compile them first (default:
    one per CPU). Raises `NoGpuError` without a GPU.
    """
    cupy = require_gpu()
    gpu = current_gpu_name() or "unknown GPU"
    compute_capability = current_compute_capability()
    configs = list(enumerate_configs(variant))
    valid, rejected = filter_configs(project, variant, configs, size)
    valid = sample_configs(variant, valid, limit)
    candidates: list[Candidate] = list(rejected)
    settings = BenchSettings(repeats=repeats, warmup=warmup)
    flusher = L2Flusher(cupy)
    compile_s = compile_ahead(project, variant, size, valid, compile_workers)
    for params in valid:
        # bench_one verifies before timing and records compile errors as "failed".
        outcome = bench_one(project, variant, size, settings, params=params, gpu=gpu,
                            flusher=flusher)
        candidate = Candidate(params=params, status="ok" if outcome.ok else "failed",
                              reason=outcome.error, median_ms=outcome.median_ms,
                              gflops=outcome.gflops, rel_error=outcome.rel_error)
        candidates.append(candidate)
        if progress is not None:
            progress(candidate)

    timed = [c for c in candidates if c.status == "ok" and c.median_ms is not None]
    best = min(timed, key=lambda c: c.median_ms) if timed else None  # type: ignore[arg-type]
    result = TuneResult(variant.name, gpu, size, best, candidates, compile_s)
    if best is not None and save:
        cache = cache if cache is not None else TuneCache(cache_path(project), kept=True)
        cache.put({
            "variant": variant.name,
            "gpu": gpu,
            "compute_capability": compute_capability,  # lets a sibling model borrow it
            "size": str(size),
            "params": best.params,
            "source_sha256": source_fingerprint(project, variant),
            "median_ms": best.median_ms,
            "gflops": best.gflops,
            "rel_error": best.rel_error,
            "tuned_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "repeats": repeats,
            "configs": {"enumerated": len(configs), "rejected": result.rejected,
                        "failed": result.failed, "timed": result.timed},
            "candidates": [asdict(c) for c in candidates if c.status != "rejected"],
        })
        cache.save(project.name)
    return result
