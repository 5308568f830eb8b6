"""Runs regrouped as series: one kernel at one size on one GPU model, in the order added.

GPU models never share a series: an H100 and an H200 run of the same kernel are two series,
which the trend pages show side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.history.record import KernelRecord, Size, StoredRun, size_text
from harness.history.steps import Point
from harness.history.store import HistoryError
from harness.util import compiled_kernel_regex


@dataclass(frozen=True, order=True)
class SeriesKey:
    name: str
    size: Size | None
    ordinal: int
    gpu: str

    @property
    def kernel_label(self) -> str:
        size = size_text(self.size)
        text = f"{self.name} [{size}]" if size else self.name
        return f"{text} #{self.ordinal}" if self.ordinal else text

    @property
    def label(self) -> str:
        return f"{self.kernel_label} on {self.gpu}"

    @property
    def slug(self) -> str:
        raw = f"{self.name}-{size_text(self.size) or 'any'}-{self.ordinal}-{self.gpu}"
        return re.sub(r"[^A-Za-z0-9._-]+", "_", raw).strip("_")[:150]


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    runs: tuple[StoredRun, ...]
    kernels: tuple[KernelRecord, ...]  # one per run, same order

    def points(self) -> list[Point]:
        return [Point(k.time_ms or 0.0, k.samples_ms) for k in self.kernels]

    def values(self, metric: str) -> list[float | None]:
        return [k.metrics.get(metric) for k in self.kernels]

    def __len__(self) -> int:
        return len(self.runs)


def series_key(run: StoredRun, kernel: KernelRecord) -> SeriesKey:
    return SeriesKey(kernel.name, kernel.size, kernel.ordinal, run.gpu or "unknown GPU")


def build_series(runs: list[StoredRun], kernel: str | None = None) -> list[Series]:
    """Every series of these runs, sorted by kernel then GPU; `kernel`, a regular expression
    (ncu's `-k` as `kernel_pattern` turns it), keeps the kernels whose variant or function
    name it matches."""
    pattern = None if kernel is None else compiled_kernel_regex(kernel, HistoryError)
    grouped: dict[SeriesKey, tuple[list[StoredRun], list[KernelRecord]]] = {}
    for run in runs:
        for record in run.kernels:
            if pattern is not None and not (pattern.search(record.name) or (
                    record.function and pattern.search(record.function))):
                continue
            if record.time_ms is None:
                continue  # nothing to plot or judge: a kernel without duration or samples
            runs_of, kernels_of = grouped.setdefault(series_key(run, record), ([], []))
            runs_of.append(run)
            kernels_of.append(record)
    return [Series(key, tuple(r), tuple(k))
            for key, (r, k) in sorted(grouped.items(), key=lambda item: _order(item[0]))]


def _order(key: SeriesKey) -> tuple[str, tuple[int, ...], int, str]:
    return key.name, key.size or (), key.ordinal, key.gpu
