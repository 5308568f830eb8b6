"""`ncuh bench` as a library: correctness first, then event timing against the reference.

For every variant and size, in chain order: the parameters are resolved (defaults, or the
tuning winners of `harness.gpu.tuning`) and checked against the variant's constraints; then
`verify` compares one launch with the project's truth on fresh inputs. A variant that cannot
take the size is recorded as "unsupported" and one that computes wrong numbers as "failed",
and neither is ever timed. The rest are timed (`harness.gpu.timing`: warm-up, L2 flush, CUDA
events) on fresh inputs. The project's reference is checked and timed the same way; its
`[[limit]]`s (practical ceilings such as a device copy) are timed, not checked, and shown as
GB/s. Every result carries GFLOP/s and GB/s from the project's work model and the seed
pages' speedup factors against the reference, the first variant and the previous iteration.

A `BenchRun` is saved as JSON (schema "ncuh.bench/1", see `harness.rundir`), atomically.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from harness import __version__
from harness.errors import NcuhError, NoGpuError, UnsupportedShapeError, one_line
from harness.gpu.backend import Runnable, prepare, prepare_call
from harness.gpu.env import (
    collect_environment,
    current_compute_capability,
    current_gpu_name,
    read_clocks,
    require_gpu,
)
from harness.gpu.timing import L2Flusher, time_launches
from harness.gpu.tuning import resolve_params
from harness.gpu.verify import verify
from harness.project import Limit, Project, Reference, Size, Variant
from harness.rundir import BENCH_SCHEMA, BenchFile, BenchRecord, load_bench
from harness.util import atomic_write_text

Kind = Literal["variant", "reference", "limit"]
Status = Literal["ok", "failed", "unsupported"]  # unsupported: the variant refuses the size
PREVIOUS = "previous"
# Files written before `[problem] summary_min_size` existed summarised sizes from 512 up; they
# keep that reading so their numbers do not move.
LEGACY_SUMMARY_MIN_SIZE = 512


@dataclass(frozen=True)
class BenchSettings:
    """How every result of a run was measured."""

    repeats: int = 30
    warmup: int = 5
    l2_flush: bool = True
    seed: int | None = None


@dataclass
class BenchResult:
    """One variant (or the reference, or a limit) at one size: samples and statistics, or why
    it was not timed."""

    variant: str
    size: tuple[int, ...]
    params: dict[str, Any]
    status: Status
    samples_ms: list[float] = field(default_factory=list)
    median_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    min_ms: float | None = None
    gflops: float | None = None
    rel_error: float | None = None
    speedup: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None
    warning: str | None = None  # set when IQR/median > 10%
    gbps: float | None = None
    kind: Kind = "variant"
    tuning: str | None = None  # where the parameters came from (harness.gpu.tuning)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.median_ms is not None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["size"] = list(self.size)
        return data

    @classmethod
    def from_record(cls, record: BenchRecord) -> BenchResult:
        """One result of a bench.json, as `harness.rundir` (the one reader) validated it."""
        return cls(
            variant=record.variant, size=tuple(record.size), params=dict(record.params or {}),
            status=record.status, samples_ms=list(record.samples_ms),
            median_ms=record.median_ms, q1_ms=record.q1_ms, q3_ms=record.q3_ms,
            min_ms=record.min_ms, gflops=record.gflops, rel_error=record.rel_error,
            speedup=dict(record.speedup), error=record.error, warning=record.warning,
            gbps=record.gbps, kind=record.kind, tuning=record.tuning,
        )


@dataclass
class BenchRun:
    """A whole `ncuh bench` run: environment, settings and every result.

    `project` (optional in files) names the project and the keys of its speedups:
    {"name", "path", "description", "reference", "reference_name", "baseline",
    "baseline_title", ...}. Files written before it existed keep the reference's key first
    and the baseline's second in every result's `speedup`.
    """

    environment: dict[str, Any]
    settings: BenchSettings
    results: list[BenchResult]
    created_at: str = field(
        default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds")
    )
    ncuh_version: str = __version__
    schema: str = BENCH_SCHEMA
    project: dict[str, Any] | None = None

    def result(self, variant: str, size: Sequence[int]) -> BenchResult | None:
        for result in self.results:
            if result.variant == variant and tuple(result.size) == tuple(size):
                return result
        return None

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(r.variant for r in self.results))

    @property
    def sizes(self) -> list[tuple[int, ...]]:
        return list(dict.fromkeys(tuple(r.size) for r in self.results))

    @property
    def speedup_keys(self) -> tuple[str | None, str | None]:
        """(reference key, baseline name) of the speedup dicts."""
        if self.project:
            return self.project.get("reference"), self.project.get("baseline")
        for result in self.results:
            keys = [k for k in result.speedup if k != PREVIOUS]
            if keys:
                return keys[0], keys[1] if len(keys) > 1 else None
        return None, None

    @property
    def summary_min_size(self) -> int | None:
        """The smallest dimension a size needs to count in the "Speedup Factors" summary
        (`[problem] summary_min_size`); None: every size counts."""
        project = self.project or {}
        if "summary_min_size" in project:
            value = project["summary_min_size"]
            return None if value is None else int(value)
        return LEGACY_SUMMARY_MIN_SIZE

    def label(self, key: str | None) -> str:
        """How the tables name a speedup key: the reference's or the baseline's own name."""
        if key is None:
            return "-"
        project = self.project or {}
        if key == project.get("reference"):
            return project.get("reference_name") or key
        return key

    def to_json(self) -> dict[str, Any]:
        data = {
            "schema": self.schema,
            "ncuh_version": self.ncuh_version,
            "created_at": self.created_at,
            "environment": self.environment,
            "settings": asdict(self.settings),
            "results": [r.to_json() for r in self.results],
        }
        if self.project is not None:
            data["project"] = self.project
        return data

    def save(self, path: Path | str) -> Path:
        """Write the run as JSON atomically (temporary file, then rename)."""
        text = json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n"
        return atomic_write_text(path, text)

    @classmethod
    def from_record(cls, record: BenchFile) -> BenchRun:
        known = BenchSettings.__dataclass_fields__
        return cls(
            environment=dict(record.environment),
            settings=BenchSettings(**{k: v for k, v in record.settings.items() if k in known}),
            results=[BenchResult.from_record(r) for r in record.results],
            created_at=record.created_at or "",
            ncuh_version=record.ncuh_version or "",
            project=dict(record.project) if record.project is not None else None,
        )

    @classmethod
    def load(cls, path: Path | str) -> BenchRun:
        """Read a saved run through `harness.rundir.load_bench`, the one reader of bench.json:
        a missing or malformed file is a `ReportError` (exit 2) naming the file and field."""
        return cls.from_record(load_bench(path))


@dataclass(frozen=True)
class BenchStep:
    """Progress report: which variant and size is done, and how it ended."""

    index: int
    total: int
    variant: str
    size: Size
    status: Status


@dataclass(frozen=True)
class BenchComparison:
    """The same variant and size in two runs: current median over baseline median."""

    variant: str
    size: tuple[int, ...]
    baseline_ms: float
    current_ms: float

    @property
    def ratio(self) -> float:
        return self.current_ms / self.baseline_ms


def per_second(amount: float | None, ms: float) -> float | None:
    """`amount` per second in billions (GFLOP/s, GB/s) for a launch taking `ms`."""
    if amount is None:
        return None
    if ms <= 0:
        raise ValueError(f"time must be positive, got {ms}")
    return amount / (ms * 1e-3) / 1e9


def speedup(reference_ms: float | None, ms: float | None) -> float | None:
    """How many times faster than the reference (the seed pages' "Speedup Factors")."""
    if reference_ms is None or ms is None or ms <= 0:
        return None
    return reference_ms / ms


def fill_speedups(results: Iterable[BenchResult], previous_of: Mapping[str, str | None],
                  reference: str | None, baseline: str | None) -> None:
    """Set each ok result's speedup against the reference, the baseline and its previous
    iteration, keyed by their names. A denominator that was not timed at the same size (not in
    the run, failed, unsupported) gives None, never a guess. Limits get no speedups."""
    results = list(results)
    keys = [key for key in (reference, baseline) if key] + [PREVIOUS]
    medians = {(r.variant, tuple(r.size)): r.median_ms for r in results if r.ok}
    for result in results:
        if result.kind == "limit":
            result.speedup = {}
            continue
        if not result.ok:
            result.speedup = dict.fromkeys(keys)
            continue
        size = tuple(result.size)
        previous = previous_of.get(result.variant)
        values = {key: speedup(medians.get((key, size)), result.median_ms)
                  for key in keys if key != PREVIOUS}
        values[PREVIOUS] = (speedup(medians.get((previous, size)), result.median_ms)
                            if previous else None)
        result.speedup = values


def aggregate_speedups(run: BenchRun, variant: str,
                       min_size: int | None = None) -> dict[str, float | None]:
    """Geometric mean of a variant's per-size speedups over sizes whose smallest dimension is
    at least `min_size` (default: the run's project's `summary_min_size`, else every size),
    keyed like the results' speedups.

    A project may quote one factor over its large sizes only (the seed pages: "on 512+
    matrices"); a geometric mean weighs every size alike, where a ratio of summed times would
    be the largest size alone.
    """
    floor = (min_size if min_size is not None else run.summary_min_size) or 1
    reference, baseline = run.speedup_keys
    out: dict[str, float | None] = {}
    for key in [k for k in (reference, baseline) if k] + [PREVIOUS]:
        values = [r.speedup.get(key) for r in run.results
                  if r.variant == variant and r.ok and min(r.size) >= floor]
        values = [v for v in values if v is not None and v > 0]
        out[key] = math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
    return out


def compare_runs(baseline: BenchRun, current: BenchRun) -> list[BenchComparison]:
    """Every variant and size timed successfully in both runs, in the current run's order."""
    comparisons = []
    for result in current.results:
        before = baseline.result(result.variant, result.size)
        if result.ok and before is not None and before.ok:
            comparisons.append(BenchComparison(result.variant, tuple(result.size),
                                               before.median_ms, result.median_ms))
    return comparisons


Target = Variant | Reference | Limit


def _time(project: Project, runnable: Runnable, size: Size, settings: BenchSettings,
          seed: int | None, flusher: Any, label: str) -> Any:
    inputs = project.inputs(size, None if seed is None else seed + 1)
    return time_launches(lambda: runnable(inputs), repeats=settings.repeats,
                         warmup=settings.warmup, flush_l2=settings.l2_flush, flusher=flusher,
                         label=label)


def bench_one(project: Project, target: Target, size: Size, settings: BenchSettings, *,
              seed: int | None = None, params: dict[str, Any] | None = None,
              gpu: str | None = None, flusher: Any = None) -> BenchResult:
    """Verify, then time, one target at one size. Never times a wrong or refused kernel.

    `params` None: the variant's tuning winner for this GPU and size, else its defaults.
    """
    kind = ("limit" if isinstance(target, Limit)
            else "reference" if isinstance(target, Reference) else "variant")
    name = target.key if isinstance(target, (Reference, Limit)) else target.name
    result = BenchResult(variant=name, size=tuple(size), params={}, status="ok", kind=kind)
    try:
        if isinstance(target, Variant):
            # The user's constraints run here too: a check that raises ends only this result.
            if params is None:
                resolved = resolve_params(project, target, size, gpu or current_gpu_name(),
                                          compute_capability=current_compute_capability())
                params, result.tuning = resolved.params, resolved.origin
            result.params = dict(params)
            problems = project.problems(target, params, size)
            if problems:
                result.status, result.error = "unsupported", "; ".join(problems)
                return result
            runnable = prepare(project, target, size, params)
            result.params = dict(runnable.params)
        else:
            runnable = prepare_call(name, target.call, size)
        if kind != "limit":
            check = verify(project, runnable, size, seed)
            # JSON has no inf/NaN: a non-finite error is stored as null with the reason.
            result.rel_error = check.rel_error if math.isfinite(check.rel_error) else None
            if not check.ok:
                result.status, result.error = "failed", check.message
                return result
        measurement = _time(project, runnable, size, settings, seed, flusher,
                            f"{name} {size}")
    except NoGpuError:
        raise
    except UnsupportedShapeError as error:
        result.status, result.error = "unsupported", str(error)
        return result
    except NcuhError as error:  # e.g. the project's own constraints raised at this size
        result.status, result.error = "failed", str(error)
        return result
    except Exception as error:  # a compile or launch failure of one variant ends only it
        result.status, result.error = "failed", one_line(error)
        return result

    result.samples_ms = list(measurement.samples_ms)
    result.median_ms = measurement.median
    result.q1_ms = measurement.q1
    result.q3_ms = measurement.q3
    result.min_ms = measurement.min
    result.warning = measurement.warning
    try:  # the user's work model, at a size the loader may not have tried
        if kind == "limit":
            result.gbps = per_second(target.bytes(size),  # type: ignore[union-attr]
                                     measurement.median)
        else:
            result.gflops = per_second(project.flops(size) if project.flops else None,
                                       measurement.median)
            result.gbps = per_second(project.bytes(size) if project.bytes else None,
                                     measurement.median)
    except Exception as error:
        result.status = "failed"
        result.error = f"work model (flops/bytes) at {size}: {one_line(error, project.folder)}"
    return result


def run_bench(
    project: Project,
    variants: Sequence[Variant | str],
    sizes: Sequence[Size],
    repeats: int = 30,
    *,
    warmup: int = 5,
    l2_flush: bool = True,
    seed: int | None = None,
    references: bool = False,
    progress: Callable[[BenchStep], None] | None = None,
) -> BenchRun:
    """Verify and time every variant at every size; the results in chain order.

    `references=True` adds the baseline (first variant) and each variant's previous
    iteration, and the project's reference and limits, so every speedup factor has its
    denominator. Raises `NoGpuError` when no GPU can be used.
    """
    chosen = [project.resolve(v) for v in variants]
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    cupy = require_gpu()
    chosen = project.with_previous(chosen) if references else project.ordered(chosen)
    targets: list[Target] = list(chosen)
    if references:
        targets += [project.reference] if project.reference else []
        targets += list(project.limits)

    settings = BenchSettings(repeats, warmup, l2_flush, seed)
    environment = collect_environment()
    flusher = L2Flusher(cupy) if l2_flush else None
    environment["l2_flush_bytes"] = flusher.nbytes if flusher else None
    gpu = environment.get("gpu") or current_gpu_name()

    results: list[BenchResult] = []
    clocks: list[dict[str, Any]] = []
    total = len(targets) * len(sizes)
    for t_index, target in enumerate(targets):
        for s_index, size in enumerate(sizes):
            step_seed = None if seed is None else seed + 1000 * t_index + 10 * s_index
            result = bench_one(project, target, size, settings, seed=step_seed, gpu=gpu,
                               flusher=flusher)
            results.append(result)
            if result.ok:
                # Read right after the timed launches: the clock they actually ran at.
                clocks.append({"variant": result.variant, "size": list(size),
                               **read_clocks(environment.get("pci_bus_id"))})
            if progress is not None:
                progress(BenchStep(len(results), total, result.variant, size, result.status))

    fill_speedups(results, {v.name: v.previous for v in chosen},
                  project.reference.key if project.reference else None, project.baseline.name)
    sm = sorted(c["sm_clock_mhz"] for c in clocks if c.get("sm_clock_mhz") is not None)
    mem = sorted(c["mem_clock_mhz"] for c in clocks if c.get("mem_clock_mhz") is not None)
    environment["idle_sm_clock_mhz"] = environment.get("sm_clock_mhz")
    if sm:
        environment["sm_clock_mhz"] = sm[len(sm) // 2]
    if mem:
        environment["mem_clock_mhz"] = mem[len(mem) // 2]
    if isinstance(environment.get("clocks"), dict):
        environment["clocks"]["sm_mhz"] = environment.get("sm_clock_mhz")
        environment["clocks"]["mem_mhz"] = environment.get("mem_clock_mhz")
    environment["clocks_after_timing"] = clocks
    return BenchRun(environment=environment, settings=settings, results=results,
                    project=project.manifest())
