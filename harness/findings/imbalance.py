"""Work imbalance between SMs: the busiest SM's active cycles against the average SM's
(`sm__cycles_active.{max,avg,sum}`), and for how long one SM ran alone at the end.

The counters give the busiest SM, the average and the sum, not each SM: the time one SM ran
alone is estimated as the busiest SM's cycles beyond the average of all the others, which is
exact when the others all finished together and an upper bound otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.findings import evidence
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "imbalance"
SECTION = "Launch Statistics"
RATIO = 1.5  # busiest SM active this many times the average SM before we call it imbalance
ACTIVE_MAX, ACTIVE_AVG = "sm__cycles_active.max", "sm__cycles_active.avg"
ACTIVE_MIN, ACTIVE_SUM = "sm__cycles_active.min", "sm__cycles_active.sum"
ELAPSED = "sm__cycles_elapsed.max"
SMS = "launch__sm_count"


@dataclass(frozen=True)
class SmBalance:
    busiest: float  # active cycles of the busiest SM
    average: float  # of all SMs
    others: float  # average of all SMs but the busiest
    elapsed: float  # the kernel's elapsed SM cycles
    sms: int

    @property
    def ratio(self) -> float:
        return self.busiest / self.average if self.average else 0.0

    @property
    def alone_pct(self) -> float:
        """Estimated share of the kernel's time the busiest SM ran while the others had
        finished (see the module docstring)."""
        if not self.elapsed:
            return 0.0
        return max(0.0, 100.0 * (self.busiest - self.others) / self.elapsed)


def balance(profile: KernelReport) -> SmBalance | None:
    """The SMs' balance, or None when a counter is missing, or when some SM got no block at
    all (a grid smaller than the GPU: the waves rule names that)."""
    values = [profile.metric(name) for name in (ACTIVE_MAX, ACTIVE_AVG, ACTIVE_MIN, ACTIVE_SUM,
                                                 ELAPSED, SMS)]
    if any(v is None for v in values):
        return None
    busiest, average, least, total, elapsed, sms = (float(v) for v in values)  # type: ignore[arg-type]
    grid = profile.launch.grid_size
    if sms < 2 or least <= 0 or average <= 0 or (grid is not None and grid < sms):
        return None
    return SmBalance(busiest=busiest, average=average, others=(total - busiest) / (sms - 1),
                     elapsed=elapsed, sms=int(sms))


def _ratio(profile: KernelReport) -> float | None:
    b = balance(profile)
    return b.ratio if b is not None else None


evidence.MEASURES["sm_active_ratio"] = ("busiest SM's active cycles / the average SM's", _ratio)


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    b = balance(profile)
    if b is None or b.ratio < RATIO:
        return []
    alone = b.alone_pct
    return [Finding(
        rule=NAME, kind="bad",
        title=f"Work is unbalanced across SMs: the busiest SM was active {fmt(b.ratio)}× as "
        f"many cycles as the average SM, so for about {fmt(alone)}% of the kernel one SM ran "
        "alone.",
        text=f"sm__cycles_active: busiest SM {fmt(b.busiest, 0)} cycles, average "
        f"{fmt(b.average, 0)}, the other {b.sms - 1} SMs {fmt(b.others, 0)} on average, of "
        f"{fmt(b.elapsed, 0)} elapsed. The share of time one SM ran alone is estimated from "
        "these sums (exact when the other SMs finished together) "
        f"({SECTION}).",
        section=SECTION,
        weight=alone,
        metrics={"ratio": b.ratio, "alone_pct": alone, "busiest_cycles": b.busiest,
                 "average_cycles": b.average},
        evidence=(ev(profile, "sm_active_ratio", ">=", RATIO),),
    )]
