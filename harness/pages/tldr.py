"""The TLDR, the first thing a page says: how far the kernel is from the limit its run measured,
the binding unit, and the problem with the largest measured cost.

Where the run benched a practical limit (a device copy) the kernel's bandwidth is set against
it; at `AT_LIMIT` percent or more it is "at the limit", and nothing is proposed to win what is
not left. Where it benched a reference, the TLDR says how fast the kernel is beside it. An ncu
estimate beyond what is left to win is quoted with that bound: the limit's, or for a
compute-bound kernel its busiest pipe's (at the same instructions, the time can fall at most
to that pipe's share of its peak).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.findings import (
    Finding,
    describe_bound,
    near_dram_peak,
    pipe_headroom_pct,
    tldr_finding,
)
from harness.report import KernelReport

AT_LIMIT = 85.0  # percent of the practical limit from which a kernel is at it


@dataclass(frozen=True)
class Measured:
    """The kernel against what its run benched beside it."""

    limit_name: str | None = None  # e.g. "device copy"
    limit_pct: float | None = None  # of the limit's bandwidth
    gbps: float | None = None
    limit_gbps: float | None = None
    reference_name: str | None = None  # e.g. "CUB"
    reference_pct: float | None = None  # of the reference's speed

    @property
    def at_limit(self) -> bool:
        return self.limit_pct is not None and self.limit_pct >= AT_LIMIT


def _against(measured: Measured) -> str:
    """" It runs at 63.7% of the device copy's bandwidth (the practical limit) and 71.9% of
    CUB's speed.", or "" without bench results."""
    parts = []
    if measured.limit_pct is not None and not measured.at_limit:
        parts.append(f"{measured.limit_pct:.1f}% of the {measured.limit_name}'s bandwidth (the "
                     "practical limit)")
    if measured.reference_pct is not None:
        parts.append(f"{measured.reference_pct:.1f}% of {measured.reference_name}'s speed")
    return f" It runs at {' and '.join(parts)}." if parts else ""


def _left(profile: KernelReport, measured: Measured, top: Finding) -> str:
    """"; the device copy leaves at most 15.8% of its time to win" where ncu's estimate is
    more than the measured limit allows, or "; the FMA pipe at 77.3% of its peak leaves at
    most 29% at the same instructions" where it is more than the busiest pipe allows."""
    if top.speedup_pct is None:
        return ""
    if measured.limit_pct is not None:
        left = max(0.0, 100.0 - measured.limit_pct)
        if top.speedup_pct <= left:
            return ""
        return f"; the {measured.limit_name} leaves at most {left:.1f}% of its time to win"
    headroom = pipe_headroom_pct(profile)
    if headroom is None or top.speedup_pct <= headroom[2]:
        return ""
    label, pct, most = headroom
    return (f"; the {label} pipe at {pct:.1f}% of its peak leaves at most {most:.0f}% at the "
            "same instructions")


def tldr(profile: KernelReport, findings: list[Finding],
         measured: Measured | None = None) -> str:
    """The binding unit and the problem with the largest estimated gain, after the measured
    limit where the run has one."""
    measured = measured or Measured()
    bound = describe_bound(profile)
    top = tldr_finding(findings)
    dram = near_dram_peak(profile)
    if dram is not None:  # the memory's own speed binds: what is left is small
        bound += (f" and streams at {dram:.1f}% of the DRAM peak, near what the memory "
                  "can deliver")
    head = f"The kernel is {bound}"
    if measured.at_limit:
        head = (f"The kernel runs at the limit: {measured.gbps:,.1f} GB/s, "
                f"{measured.limit_pct:.1f}% of the {measured.limit_name}'s "
                f"{measured.limit_gbps:,.1f} GB/s (the practical limit benched in the same "
                f"run); it is {bound}")
    against = _against(measured)
    if top is None:
        return f"{head}; no rule found a clear problem.{against}"
    first = top.title.rstrip(".")
    gain = (f" (ncu estimates up to {top.speedup_pct:.0f}% speedup"
            f"{_left(profile, measured, top)})"
            if top.speedup_pct is not None else "")
    lead = ("; the largest remaining item is this: " if dram is not None or measured.at_limit
            else ", and the biggest problem is this: ")
    return f"{head}{lead}{first[0].lower()}{first[1:]}{gain}.{against}"
