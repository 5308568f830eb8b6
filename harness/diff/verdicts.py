"""Per-kernel, per-metric verdicts: SLOWER, FASTER, SAME or UNSURE.

Timing comes from the samples when both sides have them (bench's event timings, or for a
program's ranked kernel the durations of its launches in the first pass; several samples,
judged by `stats`), else from ncu's gpu__time_duration.sum (one sample per side, noise floor).
Counters are deterministic for a given kernel, so they are held to tight thresholds with no
statistics; for counters SLOWER means "moved the bad way" and FASTER "moved the good way"
(shown to people as WORSE and BETTER, see `MetricVerdict.word`).

The kernel's verdict: SLOWER when its timing is SLOWER, or when a counter got worse while the
timing did not get FASTER (a counter that worsened in a change that made the kernel measurably
faster was a trade that paid off: it is shown, not gated). Otherwise FASTER when the timing
improved (a counter that improved on its own is shown, but does not make the kernel faster),
UNSURE when something could not be decided, else SAME.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.diff.inputs import KernelData
from harness.diff.stats import TimingComparison, Verdict, compare_samples
from harness.diff.thresholds import NCU_DURATION, MetricRule, Thresholds

SEVERITY: dict[str, int] = {"SLOWER": 0, "UNSURE": 1, "FASTER": 2, "SAME": 3}
_COUNTER_WORDS: dict[str, str] = {"SLOWER": "WORSE", "FASTER": "BETTER"}


@dataclass(frozen=True)
class MetricVerdict:
    key: str  # thresholds table name, e.g. "time", "registers"
    label: str
    kind: str  # "timing" | "counter"
    direction: str
    verdict: Verdict
    baseline: float | None
    current: float | None
    unit: str
    threshold_pct: float
    change_pct: float | None = None
    # "bench" | "launches" (a program's first pass) | "ncu" for timing, metric name(s) for
    # counters
    source: str = ""
    timing: TimingComparison | None = None
    note: str = ""

    @property
    def regressed(self) -> bool:
        return self.verdict == "SLOWER"

    @property
    def word(self) -> str:
        """The verdict in words that fit the metric: a counter got WORSE or BETTER, not slower."""
        return _COUNTER_WORDS.get(self.verdict, self.verdict) if self.kind == "counter" \
            else self.verdict

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "key": self.key, "label": self.label, "kind": self.kind,
            "direction": self.direction, "verdict": self.verdict, "word": self.word,
            "baseline": _finite(self.baseline), "current": _finite(self.current),
            "unit": self.unit, "change_pct": _finite(self.change_pct),
            "threshold_pct": self.threshold_pct, "source": self.source, "note": self.note,
        }
        if self.timing is not None:
            t = self.timing
            data["statistics"] = {
                "method": t.method, "n_baseline": t.n_baseline, "n_current": t.n_current,
                "ci_low_pct": _finite(t.ci_low_pct), "ci_high_pct": _finite(t.ci_high_pct),
                "p_value": _finite(t.p_value),
            }
        return data


def judge_kernel(base: KernelData, cur: KernelData, thresholds: Thresholds) -> list[MetricVerdict]:
    """One verdict per configured metric that at least one side collected."""
    verdicts = []
    for rule in thresholds.rules:
        verdict = _judge_time(rule, base, cur, thresholds) if rule.is_time \
            else _judge_counter(rule, base, cur)
        if verdict is not None:
            verdicts.append(verdict)
    return verdicts


def kernel_verdict(metrics: list[MetricVerdict]) -> Verdict:
    """Fold a kernel's metric verdicts into one (the rule is in the module docstring)."""
    timing_faster = any(m.verdict == "FASTER" for m in metrics if m.kind == "timing")
    if any(m.verdict == "SLOWER" for m in metrics if m.kind == "timing"):
        return "SLOWER"
    if any(m.verdict == "SLOWER" for m in metrics) and not timing_faster:
        return "SLOWER"
    if timing_faster:
        return "FASTER"
    if any(m.verdict == "UNSURE" for m in metrics):
        return "UNSURE"
    return "SAME"


def _judge_time(rule: MetricRule, base: KernelData, cur: KernelData,
                thresholds: Thresholds) -> MetricVerdict | None:
    if base.samples_ms and cur.samples_ms:
        samples_b, samples_c, unit = base.samples_ms, cur.samples_ms, "ms"
        source = cur.samples_source
    else:
        b, c = base.metric(NCU_DURATION), cur.metric(NCU_DURATION)
        if b is None and c is None:
            return None
        if b is None or c is None:
            return _not_collected(rule, b, c, "ns", NCU_DURATION)
        samples_b, samples_c, unit, source = (b,), (c,), "ns", "ncu"
    timing = compare_samples(samples_b, samples_c, rule.threshold_pct, rule.direction,
                             thresholds.timing)
    return MetricVerdict(rule.key, rule.label, rule.kind, rule.direction, timing.verdict,
                         timing.baseline, timing.current, unit, rule.threshold_pct,
                         timing.change_pct, source, timing, timing.note)


def _judge_counter(rule: MetricRule, base: KernelData, cur: KernelData) -> MetricVerdict | None:
    b, c = rule.value(base.metrics), rule.value(cur.metrics)
    source = " + ".join(rule.metrics)
    if b is None and c is None:
        return None
    if b is None or c is None:
        return _not_collected(rule, b, c, rule.unit, source)
    delta = c - b
    change = _change_pct(b, c)
    note = ""
    if delta == 0:
        verdict: Verdict = "SAME"
    elif abs(delta) < max(rule.min_abs, 1e-12):
        verdict, note = "SAME", f"below min_abs {_amount(rule.min_abs, rule.unit)}"
    elif abs(change) <= rule.threshold_pct:
        verdict, note = "SAME", f"within the {rule.threshold_pct:g}% threshold"
    else:
        worse = delta > 0 if rule.direction == "lower" else delta < 0
        verdict = "SLOWER" if worse else "FASTER"
    return MetricVerdict(rule.key, rule.label, rule.kind, rule.direction, verdict, b, c,
                         rule.unit, rule.threshold_pct, change, source, note=note)


def _amount(value: float, unit: str) -> str:
    """A threshold as people write it: 1048576 B is "1 MiB", 32768 is "32768"."""
    if unit == "B" and value >= 1024 and value % 1024 == 0:
        for factor, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if value % factor == 0:
                return f"{int(value) // factor} {name}"
    text = f"{value:g}" if value != int(value) else str(int(value))
    return f"{text} {unit}" if unit else text


def _not_collected(rule: MetricRule, b: float | None, c: float | None, unit: str,
                   source: str) -> MetricVerdict:
    side = "baseline" if b is None else "current"
    return MetricVerdict(rule.key, rule.label, rule.kind, rule.direction, "UNSURE", b, c, unit,
                         rule.threshold_pct, None, source, note=f"not collected on the {side}")


def _change_pct(base: float, cur: float) -> float:
    if base == 0:
        return 0.0 if cur == 0 else math.copysign(math.inf, cur)
    return 100.0 * (cur - base) / abs(base)


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: a change from zero is reported as null (baseline 0 says why)."""
    return value if value is None or math.isfinite(value) else None
