"""Timing verdicts that survive noise.

Several raw samples per side: the change is the ratio of medians (current / baseline); its
uncertainty is a percentile bootstrap confidence interval (seeded, so a diff is reproducible)
and a two-sided Mann-Whitney U test. A change counts only when it passes the threshold AND the
noise: |change| >= threshold, the interval excludes 1.0, and p < alpha. Beyond the threshold
but within the noise it is UNSURE; within the threshold it is SAME.

One sample per side (ncu's gpu__time_duration.sum, no bench): nothing measures the noise, so
a stated noise floor stands in for it: a change must exceed max(threshold, noise floor).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.diff.rank_test import mann_whitney_p
from harness.diff.thresholds import Direction, TimingSettings

Verdict = Literal["SLOWER", "FASTER", "SAME", "UNSURE"]


@dataclass(frozen=True)
class TimingComparison:
    verdict: Verdict
    method: Literal["bootstrap+mann-whitney", "noise-floor"]
    n_baseline: int
    n_current: int
    baseline: float  # median
    current: float  # median
    change_pct: float  # 100 * (current / baseline - 1)
    ci_low_pct: float | None = None  # bootstrap interval of change_pct
    ci_high_pct: float | None = None
    p_value: float | None = None
    note: str = ""


def compare_samples(
    baseline: Sequence[float],
    current: Sequence[float],
    threshold_pct: float,
    direction: Direction,
    settings: TimingSettings,
) -> TimingComparison:
    """Judge a timing change from raw samples (at least one per side)."""
    base = np.asarray(baseline, dtype=float)
    cur = np.asarray(current, dtype=float)
    if base.size == 0 or cur.size == 0:
        raise ValueError("compare_samples needs at least one sample per side")
    base_median, cur_median = float(np.median(base)), float(np.median(cur))
    change = _change_pct(base_median, cur_median)
    if base.size < 2 or cur.size < 2:
        return _single(base.size, cur.size, base_median, cur_median, change, threshold_pct,
                       direction, settings.noise_floor_pct)

    low, high = _bootstrap_ci(base, cur, settings)
    p_value = mann_whitney_p(cur.tolist(), base.tolist())
    significant = (low > 0 or high < 0) and p_value < settings.alpha
    if abs(change) < threshold_pct:
        verdict: Verdict = "SAME"
        note = f"within the {threshold_pct:g}% threshold"
    elif significant:
        verdict = _direction_verdict(change, direction)
        note = f"beyond the {threshold_pct:g}% threshold and the noise (p={p_value:.2g})"
    else:
        verdict = "UNSURE"
        note = (f"beyond the {threshold_pct:g}% threshold but within the noise "
                f"({settings.confidence:.0%} interval {low:+.1f}%..{high:+.1f}%, p={p_value:.2g})")
    return TimingComparison(verdict, "bootstrap+mann-whitney", int(base.size), int(cur.size),
                            base_median, cur_median, change, low, high, p_value, note)


def _single(n_base: int, n_cur: int, base: float, cur: float, change: float,
            threshold_pct: float, direction: Direction, floor_pct: float) -> TimingComparison:
    bar = max(threshold_pct, floor_pct)
    if abs(change) < threshold_pct:
        verdict: Verdict = "SAME"
        note = f"within the {threshold_pct:g}% threshold"
    elif abs(change) < bar:
        verdict = "UNSURE"
        note = f"one sample per side: within the {floor_pct:g}% noise floor"
    else:
        verdict = _direction_verdict(change, direction)
        note = f"one sample per side: beyond the {floor_pct:g}% noise floor"
    return TimingComparison(verdict, "noise-floor", n_base, n_cur, base, cur, change, note=note)


def _bootstrap_ci(base: np.ndarray, cur: np.ndarray,
                  settings: TimingSettings) -> tuple[float, float]:
    """Percentile bootstrap interval of the change in percent, resampling each side."""
    rng = np.random.default_rng(settings.seed)
    b = settings.bootstrap_resamples
    base_medians = np.median(base[rng.integers(0, base.size, (b, base.size))], axis=1)
    cur_medians = np.median(cur[rng.integers(0, cur.size, (b, cur.size))], axis=1)
    tail = 100.0 * (1.0 - settings.confidence) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero median: no finite interval
        changes = 100.0 * (cur_medians / base_medians - 1.0)
        low, high = np.percentile(changes, [tail, 100.0 - tail])
    return float(low), float(high)


def _change_pct(base: float, cur: float) -> float:
    if base == 0:
        return 0.0 if cur == 0 else float("inf") if cur > 0 else float("-inf")
    return 100.0 * (cur / base - 1.0)


def _direction_verdict(change: float, direction: Direction) -> Verdict:
    worse = change > 0 if direction == "lower" else change < 0
    return "SLOWER" if worse else "FASTER"
