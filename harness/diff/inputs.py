"""One side of a diff: a run directory or a plain `.ncu-rep`, read into comparable kernels.

Each kernel gets a `KernelKey`: its name (the variant for the bundled chain, a program's
ranked kernel by its demangled name and launch shape, otherwise ncu's function name), the
problem size when a run recorded one, and its launch order among kernels with the same name
and size. Keys are what `matching` pairs across the two sides. A program's run (`--top`) also
brings each process's total GPU time, judged as a kernel of its own.

Each kernel is read through the typed `KernelReport` (the one reader of reports): its
metrics as a flat `{metric name: value}` in ncu's base units, so any metric a user names in a
thresholds file can be compared (a metric absent from the report is simply absent, never
zero), and ncu's own rule results, so that `explain` can say which rules appeared or changed
their estimate.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.diff.thresholds import NCU_DURATION
from harness.errors import ReportError
from harness.report import (
    KernelReport,
    RuleResult,
    every_metric,
    load_kernel_reports,
    load_kernel_summaries,
)
from harness.rundir import (
    BenchFile,
    RankingRecord,
    RunEntry,
    is_run_directory,
    kernel_key,
    load_run,
    profiled_as_ranked,
    program_key,
    shape_text,
)

Size = tuple[int, ...]
Wanted = Callable[[str], bool] | None  # metric names a reader needs; None: whole profiles


@dataclass(frozen=True, order=True)
class KernelKey:
    """Identity of a kernel across runs: name, problem size, launch order within both."""

    name: str
    size: Size | None = None
    ordinal: int = 0

    @property
    def label(self) -> str:
        size = "x".join(str(n) for n in self.size) if self.size else ""
        text = f"{self.name} [{size}]" if size else self.name
        return f"{text} #{self.ordinal}" if self.ordinal else text

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "size": list(self.size) if self.size else None,
                "ordinal": self.ordinal}


@dataclass(frozen=True)
class Environment:
    """What must agree for two sides to be comparable; None where the input does not say."""

    gpu: str | None = None
    compute_capability: str | None = None
    ncu_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "compute_capability": self.compute_capability,
                "ncu_version": self.ncu_version}


@dataclass(frozen=True)
class KernelData:
    """One kernel of one side: profiler metrics, ncu rules, and raw bench samples."""

    key: KernelKey
    function: str | None  # ncu's function name; None for a bench-only (timing-only) kernel
    source: str  # where it came from, for messages: report file name or "bench.json"
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    rules: tuple[RuleResult, ...] = ()
    samples_ms: tuple[float, ...] = ()  # bench event timings, one per repeat
    # where the samples come from: "bench" (event timings) or "launches" (a program's first
    # pass, one per launch)
    samples_source: str = "bench"
    device: str | None = None
    compute_capability: str | None = None
    profile: KernelReport | None = field(default=None, repr=False, compare=False)

    def metric(self, name: str) -> float | None:
        return self.metrics.get(name)


@dataclass(frozen=True)
class FailedEntry:
    """A run entry that did not produce a report (runner or ncu failure, wrong results)."""

    label: str
    key: KernelKey
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "key": self.key.to_json(), "error": self.error}


@dataclass(frozen=True)
class Side:
    """Everything one side of the diff contributes."""

    path: Path
    kind: str  # "run" or "report"
    environment: Environment
    kernels: tuple[KernelData, ...]
    failed: tuple[FailedEntry, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "kind": self.kind,
                "environment": self.environment.to_json(), "kernels": len(self.kernels),
                "failed": [f.to_json() for f in self.failed]}


def load_side(path: Path | str, wanted: Wanted = every_metric) -> Side:
    """Read a run directory or a plain `.ncu-rep`; raise `ReportError` (exit 2) otherwise.

    `wanted`: the metrics a reader compares (every one for diff, a few for history): a report
    that no command kept is then read in part (`load_kernel_summaries`: aggregate values,
    units, rules); None reads every kernel's whole profile."""
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path}: no such file or directory")
    if path.is_dir():
        return _load_run_side(path, wanted)
    kernels = _number(_report_kernels(path, name=None, size=None, wanted=wanted))
    return Side(path=path, kind="report", environment=_environment_from_kernels(kernels),
                kernels=kernels)


# --- run directories -------------------------------------------------------------------------


def _load_run_side(path: Path, wanted: Wanted) -> Side:
    if not is_run_directory(path):
        raise ReportError(f"{path}: not a run directory (no manifest.json) and not a report")
    run = load_run(path)
    bench = _bench_samples(run.bench())
    ranking = run.record.ranking if run.record is not None else None
    kernels: list[KernelData] = _program_times(ranking)
    failed: list[FailedEntry] = []
    timed: set[tuple[str, Size | None]] = set()
    for entry in run.entries:
        if not entry.ok:
            name = _ranked_name(entry, ranking) or entry.variant or entry.label
            failed.append(FailedEntry(entry.label, KernelKey(name, entry.size),
                                      entry.error or f"status {entry.status}"))
            continue
        if entry.ranked is not None and ranking is not None:
            kernels += _ranked_kernels(entry, ranking, wanted)
            continue
        for kernel in _entry_kernels(entry, wanted):
            samples = bench.get((kernel.key.name, kernel.key.size))
            if samples and kernel.key.name == entry.variant:
                kernel = _with_samples(kernel, samples)
                timed.add((kernel.key.name, kernel.key.size))
            kernels.append(kernel)
    # Bench results without a profiled kernel (the reference, or a variant whose report holds
    # several kernels) are still timed: they become timing-only kernels.
    for (variant, size), samples in bench.items():
        if (variant, size) not in timed:
            kernels.append(KernelData(key=KernelKey(variant, size), function=None,
                                      source="bench.json", samples_ms=samples))
    if not kernels and not failed:
        raise ReportError(f"{path}: the run holds no entry and no bench result")
    numbered = _number(kernels)
    env = _environment_from_manifest(run.environment, numbered)
    return Side(path=path, kind="run", environment=env, kernels=numbered,
                failed=tuple(failed))


def _entry_kernels(entry: RunEntry, wanted: Wanted = None) -> list[KernelData]:
    """The kernels of one run entry; the variant's own kernel is keyed by the variant name.

    `ncuh profile` captures exactly one kernel per entry, which then is the variant, unless the
    manifest names the variant's kernel and the report does not hold it. When a report holds
    several, the one whose function name is the variant (or ends in _<variant>)
    takes the variant's name; the others keep their function names.
    """
    assert entry.report is not None
    kernels = _report_kernels(entry.report, name=None, size=entry.size, wanted=wanted)
    if entry.variant is None:
        return kernels
    foreign = entry.foreign([k.function or "" for k in kernels])
    if foreign is not None:
        # Another kernel than the one the manifest names: compared under its own name, never
        # as the variant (a wrong report must not read as the variant getting faster).
        print(f"ncuh: warning: {foreign}", file=sys.stderr)
        return kernels
    if len(kernels) == 1:
        return [_renamed(kernels[0], entry.variant)]
    own = [k for k in kernels if k.function == entry.variant
           or (k.function or "").endswith(f"_{entry.variant}")]
    if len(own) == 1:
        return [_renamed(k, entry.variant) if k is own[0] else k for k in kernels]
    return kernels


# --- a program's ranked kernels (`ncuh profile --top`) -------------------------------------


def _ranked_name(entry: RunEntry, ranking: RankingRecord | None) -> str | None:
    """The name an entry's ranked kernel goes by across runs (`harness.rundir.kernel_key`)."""
    if entry.ranked is None or ranking is None:
        return None
    process = ranking.process(entry.ranked.process)
    kernel = process.kernel(entry.ranked.rank) if process is not None else None
    if kernel is None:
        return None
    return kernel_key(kernel, process.key if ranking.several else None)


def _ranked_kernels(entry: RunEntry, ranking: RankingRecord,
                    wanted: Wanted) -> list[KernelData]:
    """The report of a ranked kernel's launch, named by its name and launch shape and timed
    by every launch the first pass saw; a report of another kernel (the program launched
    differently in the second pass) keeps its own name and no samples."""
    assert entry.ranked is not None and entry.report is not None
    process = ranking.process(entry.ranked.process)
    ranked = process.kernel(entry.ranked.rank) if process is not None else None
    assert process is not None and ranked is not None  # load_run checked the reference
    kernels = _report_kernels(entry.report, name=None, size=None, wanted=wanted)
    own = [k for k in kernels if k.profile is not None and profiled_as_ranked(
        k.profile.mangled_name, k.profile.demangled_name, _dims(k, "launch__grid_dim_"),
        _dims(k, "launch__block_dim_"), ranked)]
    if len(own) != 1:
        held = ", ".join(_launch_text(k) for k in kernels) or "no kernel"
        print(f"ncuh: warning: {entry.report}: holds {held}, not the ranked launch "
              f"{kernel_key(ranked)} (compared under its own name)", file=sys.stderr)
        return kernels
    name = kernel_key(ranked, process.key if ranking.several else None)
    samples = tuple(ns / 1e6 for ns in ranked.durations_ns)
    return [_with_samples(_renamed(k, name), samples, "launches") if k is own[0] else k
            for k in kernels]


def _launch_text(kernel: KernelData) -> str:
    """`name <<<grid, block>>>` where the report says its launch's shape, else the name."""
    grid, block = _dims(kernel, "launch__grid_dim_"), _dims(kernel, "launch__block_dim_")
    name = (kernel.profile.demangled_name if kernel.profile is not None else None) \
        or kernel.function or "?"
    if grid is None or block is None:
        return name
    return f"{name} <<<{shape_text(grid)}, {shape_text(block)}>>>"


def _dims(kernel: KernelData, prefix: str) -> tuple[int, ...] | None:
    """A launch's grid or block (`prefix` x, y, z) where the report says all three."""
    values = [kernel.metric(f"{prefix}{axis}") for axis in "xyz"]
    return tuple(int(v) for v in values if v is not None) if None not in values else None


def _program_times(ranking: RankingRecord | None) -> list[KernelData]:
    """Each process's total GPU time over the ranked launches, as a kernel of its own that
    diff and history judge like any other (one sample per side)."""
    if ranking is None:
        return []
    return [KernelData(key=KernelKey(program_key(p.key if ranking.several else None)),
                       function=None, source="the first pass's launches",
                       metrics={NCU_DURATION: p.total_ns},
                       units={NCU_DURATION: "ns"})
            for p in ranking.processes]


BenchSamples = dict[tuple[str, Size | None], tuple[float, ...]]


def _bench_samples(bench: BenchFile | None) -> BenchSamples:
    if bench is None:
        return {}
    return {(r.variant, tuple(r.size)): r.samples_ms
            for r in bench.results if r.ok and r.samples_ms}


def _environment_from_manifest(env: dict[str, Any], kernels: tuple[KernelData, ...]) -> Environment:
    from_reports = _environment_from_kernels(kernels)
    cc = env.get("compute_capability")
    return Environment(
        gpu=env.get("gpu") or from_reports.gpu,
        compute_capability=str(cc) if cc is not None else from_reports.compute_capability,
        ncu_version=env.get("ncu_version"),
    )


def _environment_from_kernels(kernels: tuple[KernelData, ...]) -> Environment:
    devices = sorted({k.device for k in kernels if k.device})
    ccs = sorted({k.compute_capability for k in kernels if k.compute_capability})
    # A plain .ncu-rep does not expose the ncu version through ncu_report: left unknown, and
    # an unknown field is never reported as a mismatch.
    return Environment(gpu=", ".join(devices) or None, compute_capability=", ".join(ccs) or None)


# --- reports ---------------------------------------------------------------------------------


def _report_kernels(path: Path, name: str | None, size: Size | None,
                    wanted: Wanted = None) -> list[KernelData]:
    # load_kernel_reports validates the file (missing, empty, not a report, truncated, no kernels)
    # and raises a one-line ReportError
    profiles = (load_kernel_reports(path) if wanted is None
                else load_kernel_summaries(path, wanted))
    return [_profile_kernel(profile, path, name, size) for profile in profiles]


def _profile_kernel(profile: KernelReport, path: Path, name: str | None,
                    size: Size | None) -> KernelData:
    numbers = profile.numbers()
    return KernelData(
        key=KernelKey(name or profile.name, size),
        function=profile.name,
        source=path.name,
        metrics=numbers,
        units={n: profile.metrics[n].unit for n in numbers},
        rules=profile.rules_for_pages,
        device=profile.device,
        compute_capability=profile.compute_capability,
        profile=profile,
    )


# --- keys ------------------------------------------------------------------------------------


def _renamed(kernel: KernelData, name: str) -> KernelData:
    return KernelData(**{**kernel.__dict__, "key": KernelKey(name, kernel.key.size)})


def _with_samples(kernel: KernelData, samples: tuple[float, ...],
                  source: str = "bench") -> KernelData:
    return KernelData(**{**kernel.__dict__, "samples_ms": samples, "samples_source": source})


def _number(kernels: list[KernelData]) -> tuple[KernelData, ...]:
    """Give each kernel its launch order among kernels with the same name and size."""
    seen: Counter[tuple[str, Size | None]] = Counter()
    numbered = []
    for kernel in kernels:
        group = (kernel.key.name, kernel.key.size)
        numbered.append(KernelData(**{**kernel.__dict__,
                                      "key": KernelKey(group[0], group[1], seen[group])}))
        seen[group] += 1
    return tuple(numbered)
