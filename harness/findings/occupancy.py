"""Occupancy: what limits the theoretical occupancy, and how far achieved falls short.

The limiter is the resource with the smallest block-per-SM limit (ncu's Occupancy section,
`launch__occupancy_limit_*`); ncu's AchievedOccupancy rule compares achieved to theoretical.
Where achieved falls short, the cause is read from the launch and the SMs' active cycles: a
grid short of one wave, a partial last wave, SMs out of step, or, with none of those, slots
left empty inside the resident blocks (warps that end before their block does).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.findings import evidence, imbalance, waves
from harness.findings.evidence import Evidence, ev
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


def shape_empty_pct(profile: KernelReport) -> float | None:
    """The share of warp slots the launch's shape leaves empty, in percent: all a grid short
    of one wave does not fill, or what a partial last wave can leave empty."""
    per_sm = profile.launch.waves_per_sm
    if per_sm is None or per_sm <= 0:
        return None
    return 100.0 * (1.0 - per_sm) if per_sm < 1.0 else waves.idle_share_pct(per_sm)


def _unexplained_empty(profile: KernelReport) -> float | None:
    empty, shape = waves.empty_slots_pct(profile), shape_empty_pct(profile)
    return None if empty is None or shape is None else max(0.0, empty - shape)


evidence.MEASURES["unexplained_empty_pct"] = (
    "empty warp slots beyond what the launch's shape leaves empty (%)", _unexplained_empty)


def _gap_cause(profile: KernelReport) -> tuple[str, tuple[Evidence, ...]]:
    """Why warps fill fewer slots than the launch allows, as far as the counters tell, and
    the evidence for it. The launch's shape (a short grid, a partial last wave) is the cause
    where it accounts for the empty slots; what it does not account for is SMs out of step
    or slots empty inside the resident blocks."""
    per_sm, shape = profile.launch.waves_per_sm, shape_empty_pct(profile)
    rest = _unexplained_empty(profile)
    if per_sm is None or shape is None or rest is None:
        return ("which of a short grid, a partial last wave, uneven blocks or warps ending "
                "early is not judged: the report lacks the waves per SM"), ()
    if rest <= waves.BAD_IDLE:
        said = (f"the grid fills only {waves.wave_share(per_sm)} of one wave, so SMs hold fewer "
                "blocks than they could" if per_sm < 1.0 else
                f"the partial last of {fmt(per_sm, 2)} waves leaves up to {fmt(shape)}% of "
                "the slots empty")
        return said, (ev(profile, "unexplained_empty_pct", "<=", waves.BAD_IDLE),)
    beyond = (ev(profile, "unexplained_empty_pct", ">", waves.BAD_IDLE),)
    lead = (f"the launch's shape ({fmt(per_sm, 2)} waves) leaves at most {fmt(shape)}% of the "
            "slots empty, " if shape >= 0.05 else
            f"the launch's shape ({fmt(per_sm, 2)} waves) leaves no slot empty, ")
    if _one_block_per_sm(profile):  # an SM whose block ended is idle, not counted as active
        return (lead + f"so the rest is inside the blocks{_warps_kept(profile)}; "
                f"{_inside(profile)}"), (*beyond, ev(profile, "waves", "<=", 1.0))
    sms = imbalance.balance(profile)
    if sms is None:
        why = ("some SMs got no block, so their active cycles do not compare"
               if per_sm < 1.0 else "the report lacks the SMs' active cycles")
        return (lead + f"and whether the rest is uneven blocks or warps ending early is not "
                f"judged: {why}"), beyond
    if sms.ratio >= imbalance.RATIO:
        return (lead + f"and blocks finish unevenly: the busiest SM was active "
                f"{fmt(sms.ratio)}x the average SM's cycles"), (
                    *beyond, ev(profile, "sm_active_ratio", ">=", imbalance.RATIO))
    return (lead + f"and the SMs ran in step (the busiest SM active {fmt(sms.ratio)}x the "
            f"average), so the rest is inside the SMs{_warps_kept(profile)}; "
            f"{_inside(profile)}"), (*beyond, ev(profile, "sm_active_ratio", "<",
                                                 imbalance.RATIO))


def _warps_kept(profile: KernelReport) -> str:
    """": a resident block keeps 9.0 of its 12 warps active on average" (one block per SM),
    ": 38.4 of the 48 warps its 6 blocks could hold stay active on average" (several)."""
    occ, block, per_sm = profile.occupancy, profile.launch.block_size, profile.launch.waves_per_sm
    known = [v for v in occ.block_limits.values() if v]
    if not (block and known and occ.theoretical_pct and occ.achieved_pct and per_sm):
        return ""
    warps, blocks = -(-int(block) // 32), int(min(known))
    # a grid short of one wave spreads fewer blocks over each SM (an SM with one has it all)
    spread = 1.0 if blocks == 1 else min(per_sm, 1.0)
    active = warps * blocks * occ.achieved_pct / occ.theoretical_pct / spread
    if blocks == 1:
        return f": a resident block keeps {fmt(active, 1)} of its {warps} warps active on average"
    return (f": {fmt(active, 1)} of the {warps * blocks} warps its {blocks} blocks could hold "
            "stay active on average")


def _one_block_per_sm(profile: KernelReport) -> bool:
    """One block per SM at most, for the whole kernel (one wave or less)."""
    known = [v for v in profile.occupancy.block_limits.values() if v]
    per_sm = profile.launch.waves_per_sm
    return bool(known) and min(known) == 1 and per_sm is not None and per_sm <= 1.0


def _inside(profile: KernelReport) -> str:
    """What leaves slots empty inside an SM that the counters can tell apart: with one block
    per SM and one wave, a block that ends idles its SM (not counted as active), so only
    warps ending before their block remain; otherwise blocks ending apart, or the wait between
    one block and the next, are as likely."""
    per_sm = profile.launch.waves_per_sm or 0.0
    if _one_block_per_sm(profile):
        return "with one block per SM for the whole kernel, warps end before their block does"
    if per_sm <= 1.0:
        return ("warps end before their block does, or blocks before the others on their SM "
                "(the counters do not tell which)")
    return ("warps end before their block does, blocks before the others on their SM, or "
            "slots wait between one block's end and the next one's start (the counters do "
            "not tell which)")


def _short_of_theoretical(profile: KernelReport, metrics: dict[str, float | str]) -> Finding:
    """Achieved occupancy well short of what the launch allows, and why."""
    occ = profile.occupancy
    theoretical, achieved = occ.theoretical_pct or 0.0, occ.achieved_pct or 0.0
    cause, evidence = _gap_cause(profile)
    return Finding(
        rule=NAME,
        kind="bad",
        title=f"Achieved occupancy ({fmt(achieved)}%) falls well short of theoretical "
        f"({fmt(theoretical)}%).",
        text=f"Warps are active for {fmt(achieved)}% of the slots against a possible "
        f"{fmt(theoretical)}%: {cause} ({SECTION}).",
        section=SECTION,
        weight=theoretical - achieved,
        metrics=metrics,
        evidence=(ev(profile, "achieved_of_theoretical_pct", "<", 100.0 * GAP_RATIO),
                  *evidence),
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
