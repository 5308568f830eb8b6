"""What history keeps of a run: its manifest, each kernel's key metrics, rules and samples.

A run directory is read the way `ncuh diff` reads one (`load_side`), then cut down to the
metrics that trends, change points and diff's explanation use, so a stored run is a few
kilobytes rather than its reports. `KernelRecord.kernel_data()` gives the kernel back in the
form diff judges and explains; a `StoredRun` is a run as the store gives it back.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.diff import (
    EXPLANATORY_COUNTERS,
    NCU_DURATION,
    STALL_PREFIX,
    STALL_SUFFIX,
    FailedEntry,
    KernelData,
    KernelKey,
    load_side,
    load_thresholds,
)
from harness.errors import ReportError
from harness.report import RuleResult
from harness.rundir import is_run_directory

Size = tuple[int, ...]

# Counters the trend pages plot (beside time); all of them are also kept for explanations.
TREND_METRICS: dict[str, str] = {
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "lts__t_sectors.sum": "L2 sectors",
    "smsp__inst_executed.sum": "instructions executed",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy (%)",
}
SPEED_OF_LIGHT = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
)
OCCUPANCY = ("sm__maximum_warps_per_active_cycle_pct",
             "sm__warps_active.avg.pct_of_peak_sustained_active")
ADVICE_TYPES = ("OPT", "WARN", "ERROR")  # the rule results diff's explanation compares


def kept_metric(name: str, threshold_metrics: frozenset[str]) -> bool:
    """Whether a metric belongs to the subset history keeps."""
    return (name == NCU_DURATION or name in EXPLANATORY_COUNTERS or name in TREND_METRICS
            or name in SPEED_OF_LIGHT or name in OCCUPANCY or name in threshold_metrics
            or name.startswith("launch__occupancy_limit_")
            or (name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX)))


def _threshold_metrics() -> frozenset[str]:
    return frozenset(m for rule in load_thresholds(None).rules for m in rule.metrics)


@dataclass(frozen=True)
class KernelRecord:
    """One kernel of a stored run."""

    name: str
    size: Size | None
    ordinal: int
    function: str | None
    device: str | None
    compute_capability: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    rules: tuple[dict[str, Any], ...] = ()
    samples_ms: tuple[float, ...] = ()

    @property
    def key(self) -> KernelKey:
        return KernelKey(self.name, self.size, self.ordinal)

    @property
    def time_ms(self) -> float | None:
        """The bench median where there are samples, else ncu's duration (in ms)."""
        if self.samples_ms:
            ordered = sorted(self.samples_ms)
            middle = len(ordered) // 2
            return ordered[middle] if len(ordered) % 2 else 0.5 * (ordered[middle - 1]
                                                                   + ordered[middle])
        duration = self.metrics.get(NCU_DURATION)
        return None if duration is None else duration * 1e-6

    def payload(self) -> bytes:
        data = {"cc": self.compute_capability, "metrics": self.metrics, "units": self.units,
                "rules": list(self.rules), "samples_ms": list(self.samples_ms)}
        return zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)

    def kernel_data(self, samples_ms: tuple[float, ...] | None = None,
                    source: str = "history") -> KernelData:
        """The kernel as diff reads one (optionally with other samples, e.g. pooled)."""
        rules = tuple(RuleResult(name=r["name"], title=r["title"], type=r["type"], message="",
                                 speedup_pct=r.get("speedup_pct")) for r in self.rules)
        return KernelData(key=self.key, function=self.function, source=source,
                          metrics=dict(self.metrics), units=dict(self.units), rules=rules,
                          samples_ms=self.samples_ms if samples_ms is None else samples_ms,
                          device=self.device, compute_capability=self.compute_capability)


@dataclass(frozen=True)
class RunRecord:
    """One run directory, reduced to what history keeps."""

    source: Path
    fingerprint: str
    manifest: dict[str, Any]
    project: str | None
    gpu: str | None
    compute_capability: str | None
    ncu_version: str | None
    started_at: str | None
    git_commit: str | None  # what the manifest says, if anything
    kernels: tuple[KernelRecord, ...]
    failed: tuple[FailedEntry, ...] = ()  # entries without a report (wrong results, a crash)

    def manifest_blob(self) -> bytes:
        return zlib.compress(json.dumps(self.manifest, separators=(",", ":")).encode(), 6)

    def failed_json(self) -> str:
        return json.dumps([f.to_json() for f in self.failed], separators=(",", ":"))


@dataclass(frozen=True)
class StoredRun:
    """A run as the store holds it, with its kernels (in the order they were recorded)."""

    id: int
    commit: str
    branch: str | None
    tag: str | None
    project: str | None
    gpu: str | None
    compute_capability: str | None
    ncu_version: str | None
    started_at: str | None
    added_at: str
    source: str
    kernels: tuple[KernelRecord, ...]
    failed: tuple[FailedEntry, ...] = ()

    @property
    def short_commit(self) -> str:
        return self.commit[:10]


def size_text(size: Size | None) -> str | None:
    return "x".join(str(n) for n in size) if size else None


def read_run(path: Path | str) -> RunRecord:
    """Read a run directory into a `RunRecord`; `ReportError` (exit 2) when it is not one."""
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path}: no such file or directory")
    if not is_run_directory(path):
        raise ReportError(f"{path}: not a run directory (no manifest.json)")
    keep = _threshold_metrics()

    def wanted(name: str) -> bool:
        return kept_metric(name, keep)

    side = load_side(path, wanted=wanted)
    manifest_bytes = (path / "manifest.json").read_bytes()
    bench = path / "bench.json"
    digest = hashlib.sha256(manifest_bytes)
    if bench.is_file():
        digest.update(bench.read_bytes())
    manifest = json.loads(manifest_bytes)
    kernels = tuple(_kernel_record(k, keep) for k in side.kernels)
    project = manifest.get("project")
    return RunRecord(
        source=path.resolve(), fingerprint=digest.hexdigest(), manifest=manifest,
        project=_text(project.get("name")) if isinstance(project, dict) else None,
        gpu=_text(side.environment.gpu),
        compute_capability=_text(side.environment.compute_capability),
        ncu_version=_text(side.environment.ncu_version),
        started_at=_text(manifest.get("started_at")),
        git_commit=_text(manifest.get("git_commit")), kernels=kernels, failed=side.failed)


def _text(value: object) -> str | None:
    """A manifest's value as the text a store keeps (a GPU name written as a number is
    that number's text)."""
    return None if value is None else str(value)


def _kernel_record(kernel: KernelData, keep: frozenset[str]) -> KernelRecord:
    # a value that is no finite number (ncu's NaN) is not collected: JSON has no NaN
    metrics = {n: v for n, v in kernel.metrics.items()
               if kept_metric(n, keep) and math.isfinite(v)}
    rules = tuple({"name": r.name, "title": r.title, "type": r.type,
                   "speedup_pct": r.speedup_pct}
                  for r in kernel.rules if r.type in ADVICE_TYPES)
    return KernelRecord(
        name=kernel.key.name, size=kernel.key.size, ordinal=kernel.key.ordinal,
        function=kernel.function, device=kernel.device,
        compute_capability=kernel.compute_capability, metrics=metrics,
        units={n: kernel.units[n] for n in metrics if n in kernel.units}, rules=rules,
        samples_ms=tuple(kernel.samples_ms))
