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
from harness.findings.occupancy_limits import binding, blocks_per_sm, causes
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


def _blocks_held(profile: KernelReport) -> float | None:
    """Blocks an active SM holds on average while the grid lasts: all it can past one wave;
    short of one wave the grid's blocks spread over the SMs, one at least on each SM that got
    any (SMs without a block are idle, and achieved occupancy counts active cycles only)."""
    per_sm, most = profile.launch.waves_per_sm, blocks_per_sm(profile)
    if per_sm is None or per_sm <= 0 or most is None:
        return None
    return float(most) if per_sm >= 1.0 else max(per_sm * most, 1.0)


def shape_empty_pct(profile: KernelReport) -> float | None:
    """The share of an active SM's warp slots the launch's shape leaves empty, in percent: a
    grid short of one wave gives each SM fewer blocks than it holds; a partial last wave can
    leave up to `waves.idle_share_pct` empty where an SM holds several blocks (with one, an SM
    of the tail is full or idle, and idle cycles are not counted)."""
    per_sm, most, held = profile.launch.waves_per_sm, blocks_per_sm(profile), _blocks_held(profile)
    if per_sm is None or most is None or held is None:
        return None
    if per_sm < 1.0:
        return 100.0 * (1.0 - held / most)
    return 0.0 if most == 1 else waves.idle_share_pct(per_sm)


def _unexplained_empty(profile: KernelReport) -> float | None:
    empty, shape = waves.empty_slots_pct(profile), shape_empty_pct(profile)
    return None if empty is None or shape is None else max(0.0, empty - shape)


evidence.MEASURES["unexplained_empty_pct"] = (
    "empty warp slots beyond what the launch's shape leaves empty (%)", _unexplained_empty)


def _uncompared(profile: KernelReport) -> str:
    """Why the SMs' active cycles cannot be compared (`imbalance.balance` is None)."""
    grid, sms = profile.launch.grid_size, profile.metric(imbalance.SMS)
    if any(profile.metric(name) is None for name in (
            imbalance.ACTIVE_MAX, imbalance.ACTIVE_AVG, imbalance.ACTIVE_MIN,
            imbalance.ACTIVE_SUM, imbalance.ELAPSED, imbalance.SMS)):
        return "the report lacks the SMs' active cycles"
    if grid is not None and sms is not None and grid < sms:
        return "some SMs got no block, so their active cycles do not compare"
    return "some SM was never active, so the SMs' active cycles do not compare"


def _gap_cause(profile: KernelReport) -> tuple[str, tuple[Evidence, ...]]:
    """Why warps fill fewer slots than the launch allows, as far as the counters tell, and
    the evidence for it. The launch's shape (a short grid, a partial last wave) is the cause
    where it accounts for the empty slots; what it does not account for is SMs out of step
    or slots empty inside the resident blocks."""
    per_sm, shape = profile.launch.waves_per_sm, shape_empty_pct(profile)
    rest = _unexplained_empty(profile)
    if per_sm is None or shape is None or rest is None:
        return ("which of a short grid, a partial last wave, uneven blocks or warps ending "
                "early is not judged: the report lacks the waves per SM or the block "
                "limits"), ()
    short = (ev(profile, "waves", "<", 1.0),) if per_sm < 1.0 else (
        ev(profile, "waves", ">=", 1.0),)
    if rest <= waves.BAD_IDLE and shape > 0.0:
        said = (f"the grid fills only {waves.wave_share(per_sm)} of one wave, so SMs hold fewer "
                "blocks than they could" if per_sm < 1.0 else
                f"the partial last of {fmt(per_sm, 2)} waves leaves up to {fmt(shape)}% of "
                "the slots empty")
        return said, (ev(profile, "unexplained_empty_pct", "<=", waves.BAD_IDLE),
                      ev(profile, "blocks_per_sm", ">", 1.0), *short)
    beyond = (ev(profile, "unexplained_empty_pct", ">", waves.BAD_IDLE), *short)
    lead = (f"the launch's shape ({fmt(per_sm, 2)} waves) leaves at most {fmt(shape)}% of the "
            "slots empty, " if shape >= 0.05 else
            f"the launch's shape ({fmt(per_sm, 2)} waves) leaves no slot empty, ")
    if _one_block_per_sm(profile):  # an SM whose block ended is idle, not counted as active
        return (lead + f"so the rest is inside the blocks{_warps_kept(profile)}; "
                f"{_inside(profile)}"), (*beyond, ev(profile, "blocks_per_sm", "<=", 1.0))
    sms = imbalance.balance(profile)
    if sms is None:
        return (lead + "and whether the rest is uneven blocks or warps ending early is not "
                f"judged: {_uncompared(profile)}"), beyond
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
    ": 38.4 of the 48 warps its 6 blocks hold stay active on average" (several). Achieved
    occupancy is of the SM's warp slots, theoretical of what its most blocks fill."""
    occ, block, held = profile.occupancy, profile.launch.block_size, _blocks_held(profile)
    most = blocks_per_sm(profile)
    if not (block and most and held and occ.theoretical_pct and occ.achieved_pct):
        return ""
    warps = -(-int(block) // 32)
    active = warps * most * occ.achieved_pct / occ.theoretical_pct
    if most == 1:
        return f": a resident block keeps {fmt(active, 1)} of its {warps} warps active on average"
    def count(x: float) -> str:  # "8", "1.2"
        return fmt(x, 0) if float(x).is_integer() else fmt(x, 1)

    return (f": {fmt(active, 1)} of the {count(warps * held)} warps its {count(held)} blocks "
            "hold stay active on average")


def _one_block_per_sm(profile: KernelReport) -> bool:
    """One block per SM at most, for the whole kernel (one wave or less)."""
    per_sm = profile.launch.waves_per_sm
    return blocks_per_sm(profile) == 1 and per_sm is not None and per_sm <= 1.0


def _inside(profile: KernelReport) -> str:
    """What leaves slots empty inside an SM that the counters can tell apart: with one block
    per SM and one wave, a block that ends idles its SM (not counted as active), so only
    warps ending before their block remain; with one block per SM over several waves, that or
    the wait for the next block; otherwise blocks ending apart too."""
    per_sm = profile.launch.waves_per_sm or 0.0
    if _one_block_per_sm(profile):
        return "with one block per SM for the whole kernel, warps end before their block does"
    if blocks_per_sm(profile) == 1:
        return ("warps end before their block does, or slots wait between one block's end and "
                "the next one's start (the counters do not tell which)")
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
