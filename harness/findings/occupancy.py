"""Occupancy: what limits the theoretical occupancy, and how far achieved falls short.

The limiter is the resource with the smallest block-per-SM limit (ncu's Occupancy section,
`launch__occupancy_limit_*`); ncu's AchievedOccupancy rule compares achieved to theoretical.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.findings.occupancy_limits import binding, causes
from harness.report import KernelReport

NAME = "occupancy"
SECTION = "Occupancy"
LOW_THEORETICAL = 60.0  # percent of the SM's warp slots
GAP_RATIO = 0.8  # achieved below 80% of theoretical: imbalance or tail
HIGH_ACHIEVED = 75.0

LIMITER_LABELS = {
    "registers": "registers per thread",
    "shared_mem": "shared memory per block",
    "warps": "warps per block",
    "blocks": "the SM's block limit",
    "barriers": "barriers per block",
}

def limiter_text(profile: KernelReport) -> str | None:
    """"shared memory per block (2 blocks per SM)" or None when the limits were not collected.
    Only real causes are named: not the limit of a resource the kernel does not use."""
    occ = profile.occupancy
    if not occ.limiters:
        return None
    named = causes(profile) or occ.limiters
    limit = occ.block_limits[named[0]]
    names = " and ".join(LIMITER_LABELS.get(n, n) for n in named)
    blocks = limit or 0
    return f"{names} ({fmt(blocks, 0)} block{'' if blocks == 1 else 's'} per SM)"


def _low_theoretical(profile: KernelReport, named: Sequence[str], by: str,
                     metrics: dict[str, float | str]) -> Finding:
    """The bad finding of a low theoretical occupancy: its cause and the number that lifts it."""
    occ = profile.occupancy
    theoretical, achieved = occ.theoretical_pct or 0.0, occ.achieved_pct
    limit = binding(profile)
    if limit is not None:  # the cause in numbers, and the number that lifts it
        by += f": {limit.cause}; {limit.lift}"
    regs = profile.launch.registers_per_thread
    smem = profile.launch.shared_mem_per_block_bytes
    usage = []
    if regs is not None:
        usage.append(f"{fmt(regs, 0)} registers per thread")
    if smem is not None:
        usage.append(f"{fmt(smem / 1024, 1)} KiB shared memory per block")
    return Finding(
        rule=NAME,
        kind="bad",
        title=f"Theoretical occupancy is only {fmt(theoretical)}%{by}.",
        text=f"At most {fmt(theoretical)}% of the SM's warp slots can be filled{by}"
        + (f"; the kernel uses {', '.join(usage)}" if usage else "")
        + (f"; achieved {fmt(achieved)}%" if achieved is not None else "")
        + f" ({SECTION}).",
        section=SECTION,
        weight=100.0 - theoretical,
        metrics=metrics,
        evidence=(ev(profile, "theoretical_occupancy_pct", "<", LOW_THEORETICAL),),
    )


def _short_of_theoretical(profile: KernelReport, metrics: dict[str, float | str]) -> Finding:
    """Achieved occupancy well short of what the launch allows."""
    occ = profile.occupancy
    theoretical, achieved = occ.theoretical_pct or 0.0, occ.achieved_pct or 0.0
    return Finding(
        rule=NAME,
        kind="bad",
        title=f"Achieved occupancy ({fmt(achieved)}%) falls well short of theoretical "
        f"({fmt(theoretical)}%).",
        text=f"Warps are active for {fmt(achieved)}% of the slots against a possible "
        f"{fmt(theoretical)}%: blocks finish unevenly or the grid leaves SMs idle "
        f"({SECTION}).",
        section=SECTION,
        weight=theoretical - achieved,
        metrics=metrics,
        evidence=(ev(profile, "achieved_of_theoretical_pct", "<", 100.0 * GAP_RATIO),),
    )


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    occ = profile.occupancy
    theoretical, achieved = occ.theoretical_pct, occ.achieved_pct
    if theoretical is None:
        return []
    findings: list[Finding] = []
    limiter = limiter_text(profile)
    # at 100% nothing limits: the smallest block limit merely fills the SM exactly
    by = f", limited by {limiter}" if limiter and theoretical < 100.0 else ""
    metrics: dict[str, float | str] = {"theoretical_pct": theoretical}
    if achieved is not None:
        metrics["achieved_pct"] = achieved
    named = causes(profile) or occ.limiters
    if named:
        metrics["limiter"] = named[0]
    if theoretical < LOW_THEORETICAL:
        findings.append(_low_theoretical(profile, named, by, metrics))
    if achieved is not None and achieved < GAP_RATIO * theoretical:
        findings.append(_short_of_theoretical(profile, metrics))
    limit = binding(profile) if LOW_THEORETICAL <= theoretical < 100.0 else None
    if limit is not None:  # not low enough to be a problem, but the lift is worth a word
        findings.append(Finding(
            rule=NAME, kind="info",
            title=f"Theoretical occupancy is {fmt(theoretical)}%{by}: {limit.cause}; "
            f"{limit.lift}.",
            text=f"At most {fmt(theoretical)}% of the SM's warp slots can be filled{by} "
            f"({SECTION}).",
            section=SECTION, weight=100.0 - theoretical, metrics=metrics,
            evidence=(ev(profile, "theoretical_occupancy_pct", ">=", LOW_THEORETICAL),
                      ev(profile, "theoretical_occupancy_pct", "<", 100.0)),
        ))
    if (not any(f.kind == "bad" for f in findings) and achieved is not None
            and achieved >= HIGH_ACHIEVED):
        findings.append(
            Finding(
                rule=NAME,
                kind="good",
                title=f"Occupancy is high: {fmt(achieved)}% achieved of {fmt(theoretical)}% "
                f"theoretical{by}.",
                text=f"Achieved occupancy {fmt(achieved)}% against theoretical "
                f"{fmt(theoretical)}%{by} ({SECTION}).",
                section=SECTION,
                metrics=metrics,
                evidence=(ev(profile, "achieved_occupancy_pct", ">=", HIGH_ACHIEVED),),
            )
        )
    return findings
