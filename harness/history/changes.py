"""Steps of a series, each with its commit range and diff's explanation across it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.diff import (
    KernelDiff,
    MetricRule,
    Thresholds,
    explain_counters,
    judge_kernel,
    kernel_verdict,
)
from harness.history.record import KernelRecord, StoredRun
from harness.history.series import Series
from harness.history.steps import CONTEXT_RUNS, Point, StepFound, find_steps, pooled
from harness.history.store import HistoryError


@dataclass(frozen=True)
class Step:
    """A change point: the last run before it, the first after it, and why it happened."""

    series: Series
    found: StepFound
    last_before: StoredRun
    first_after: StoredRun
    diff: KernelDiff  # diff between the two runs, timing judged on the runs either side

    @property
    def change_pct(self) -> float:
        return self.found.change_pct

    @property
    def regression(self) -> bool:
        return self.found.comparison.verdict == "SLOWER"

    @property
    def commit_range(self) -> str:
        return f"{self.last_before.short_commit}..{self.first_after.short_commit}"

    @property
    def summary(self) -> str:
        explanation = self.diff.explanation
        return explanation.summary if explanation else "no counter moved"


# The smallest change of time that history calls a step. Below diff's 3% for one pair: a
# step is confirmed by several runs on each side, so a real 3% step that measures 2.9% across
# them is still found, while an A/A history (changes within the noise) has none.
STEP_PCT = 2.0


def step_thresholds(thresholds: Thresholds, step_pct: float = STEP_PCT) -> Thresholds:
    """diff's thresholds with the timing threshold set to history's step size."""
    rules = tuple(replace(r, threshold_pct=step_pct) if r.is_time else r
                  for r in thresholds.rules)
    return replace(thresholds, rules=rules)


def time_rule(thresholds: Thresholds) -> MetricRule:
    rule = next((r for r in thresholds.rules if r.is_time), None)
    if rule is None:
        raise HistoryError("the thresholds switch the timing metric off: history has "
                           "nothing to judge")
    return rule


def kernel_diff(base: KernelRecord, base_points: list[Point], cur: KernelRecord,
                cur_points: list[Point], thresholds: Thresholds,
                sources: tuple[str, str] = ("history", "history")) -> KernelDiff:
    """diff's verdicts and explanation between two stored kernels. Where every run has bench
    samples, timing is judged on the samples of the runs either side pooled; otherwise on
    ncu's durations of the two kernels, as diff judges a pair without samples."""
    with_samples = all(p.samples for p in (*base_points, *cur_points))
    base_data = base.kernel_data(pooled(base_points) if with_samples else (), sources[0])
    cur_data = cur.kernel_data(pooled(cur_points) if with_samples else (), sources[1])
    metrics = judge_kernel(base_data, cur_data, thresholds)
    verdict = kernel_verdict(metrics)
    explanation = explain_counters(base_data, cur_data, metrics)
    return KernelDiff(cur_data.key, base_data, cur_data, verdict, tuple(metrics), explanation)


def series_steps(series: Series, thresholds: Thresholds) -> list[Step]:
    """The confirmed steps of one series, explained (`thresholds` as `step_thresholds`
    gives them)."""
    rule = time_rule(thresholds)
    points = series.points()
    steps = []
    for found in find_steps(points, rule.threshold_pct, rule.direction, thresholds.timing):
        i = found.index
        before = points[max(found.before, i - CONTEXT_RUNS):i]
        after = points[i:min(found.after, i + CONTEXT_RUNS)]
        diff = kernel_diff(series.kernels[i - 1], before, series.kernels[i], after, thresholds,
                           (f"run at {series.runs[i - 1].short_commit}",
                            f"run at {series.runs[i].short_commit}"))
        steps.append(Step(series, found, series.runs[i - 1], series.runs[i], diff))
    return steps
