"""Change points in one series of values: candidates from binary segmentation, kept when diff
agrees.

The series (one value per run: the bench median, or ncu's duration) is divided by its median,
and its noise is estimated robustly from neighbouring differences: sigma = 1.4826 * MAD(diff)
/ sqrt(2), which a step barely moves. Binary segmentation (`segmentation.change_points`, as
ruptures' Binseg does it: fast on a thousand runs where PELT is quadratic) with the l2 cost
proposes change points under the penalty PENALTY_FACTOR * sigma^2 * ln(n) (BIC's form, made
stricter), so noise alone rarely pays for a split. Each candidate is then judged the way
`ncuh diff` judges timing: the samples of the runs either side (bench samples where the runs
have them, else the per-run values) must differ by more than the threshold and beyond the
noise (bootstrap interval and Mann-Whitney), and every run on either side must have moved:
each run after a step lies beyond every run before it, by at least half the threshold from
their median (so one outlying run never makes a step of the runs around it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.diff import Direction, TimingComparison, TimingSettings, compare_samples
from harness.history.segmentation import change_points

PENALTY_FACTOR = 3.0
MIN_SEGMENT = 2  # runs on each side of a step
MIN_SIGMA = 1e-4  # relative: identical values would otherwise make every wiggle a step
CONTEXT_RUNS = 5  # runs either side whose samples judge a candidate


@dataclass(frozen=True)
class Point:
    """One run's value in a series, with its bench samples where it has them."""

    value: float
    samples: tuple[float, ...] = ()


@dataclass(frozen=True)
class StepFound:
    index: int  # the first point after the step
    before: int  # first index of the segment before the step
    after: int  # one past the last index of the segment after the step
    comparison: TimingComparison

    @property
    def change_pct(self) -> float:
        return self.comparison.change_pct


def noise_sigma(values: Sequence[float]) -> float:
    """Robust noise of a normalized series from its first differences."""
    x = np.asarray(values, dtype=float)
    if x.size < 3:
        return MIN_SIGMA
    d = np.diff(x)
    mad = float(np.median(np.abs(d - np.median(d))))
    return max(1.4826 * mad / math.sqrt(2.0), MIN_SIGMA)


def candidates(values: Sequence[float], min_size: int = MIN_SEGMENT) -> list[int]:
    """Indices where binary segmentation splits the normalized series (each the first point
    after a split)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2 * min_size:
        return []
    scale = float(np.median(np.abs(x))) or 1.0
    x = x / scale
    sigma = noise_sigma(x)
    penalty = PENALTY_FACTOR * sigma * sigma * math.log(x.size)
    return change_points(x.tolist(), penalty, min_size)


def pooled(points: Sequence[Point]) -> tuple[float, ...]:
    """The samples of these runs together, or their values where a run has no samples."""
    if points and all(p.samples for p in points):
        return tuple(s for p in points for s in p.samples)
    return tuple(p.value for p in points)


def judge(before: Sequence[Point], after: Sequence[Point], threshold_pct: float,
          direction: Direction, settings: TimingSettings) -> TimingComparison:
    """diff's timing verdict between the runs before and after a candidate step."""
    return compare_samples(pooled(before), pooled(after), threshold_pct, direction, settings)


def separated(before: Sequence[Point], after: Sequence[Point], threshold_pct: float) -> bool:
    """Whether every run after the step lies beyond every run before it, and at least half
    the threshold away from the median before it (and the same seen from the other side)."""
    b = np.asarray([p.value for p in before], dtype=float)
    a = np.asarray([p.value for p in after], dtype=float)
    margin = 0.005 * threshold_pct
    b_mid, a_mid = float(np.median(b)), float(np.median(a))
    if a_mid > b_mid:
        return bool(a.min() > b.max() and a.min() > b_mid * (1 + margin)
                    and b.max() < a_mid * (1 - margin))
    return bool(a.max() < b.min() and a.max() < b_mid * (1 - margin)
                and b.min() > a_mid * (1 + margin))


def find_steps(points: Sequence[Point], threshold_pct: float, direction: Direction,
               settings: TimingSettings) -> list[StepFound]:
    """Steps that the segmentation proposes and diff's statistics confirm, in series order."""
    values = [p.value for p in points]
    found: list[StepFound] = []
    bounds = candidates(values)
    edges = [0, *bounds, len(points)]
    for i, index in enumerate(bounds):
        start = max(edges[i], index - CONTEXT_RUNS)
        stop = min(edges[i + 2], index + CONTEXT_RUNS)
        before, after = points[start:index], points[index:stop]
        comparison = judge(before, after, threshold_pct, direction, settings)
        if comparison.verdict in ("SLOWER", "FASTER") and separated(before, after, threshold_pct):
            found.append(StepFound(index, edges[i], edges[i + 2], comparison))
    return found
