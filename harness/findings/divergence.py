"""Lanes that do no work, told apart by why: the block size, divergence or predication
(Warp State Statistics, Instruction Statistics, Launch Statistics).

`smsp__thread_inst_executed_per_inst_executed.ratio` counts active lanes per executed warp
instruction; lanes can also be active but predicated off
(`smsp__thread_inst_executed_pred_on_per_inst_executed.ratio`). Of a warp's 32 lanes, a block
that is not a multiple of 32 threads leaves some empty whatever its code does (the block-size
ceiling: 8-thread blocks fill 8); divergent branches idle the lanes off the path being run
(down to the active count); predication idles active lanes (down to the working count). The
largest of the three is the cause named. Idle lanes make the SM's throughput counters overstate
useful work by 32 / lanes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from harness.findings import evidence
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "divergence"
SECTION = "Warp State Statistics"
WARP = 32.0
BAD_LANES = 24.0  # fewer working lanes than this (a quarter idle) is a problem
MOST_IDLE_LANES = 16.0  # fewer than this: most lanes idle; "good" throughput is qualified
CAUSES = ("block_size", "divergence", "predication")


def working_lanes(profile: KernelReport) -> float | None:
    return profile.divergence.working_lanes


def most_lanes_idle(profile: KernelReport) -> bool:
    """Whether fewer than half of a warp's lanes do work, on average."""
    lanes = working_lanes(profile)
    return lanes is not None and lanes < MOST_IDLE_LANES


def lane_ceiling(profile: KernelReport) -> float | None:
    """The lanes per warp a block's threads fill when all are active: 32 for a multiple of 32
    threads, 8 for 8-thread blocks, 24 for 48 (a full warp and a half-empty one)."""
    threads = profile.launch.block_size
    if not threads:
        return None
    return threads / math.ceil(threads / WARP)


def lanes_lost(profile: KernelReport) -> dict[str, float] | None:
    """Lanes per warp instruction lost to each cause (None without the lane counters)."""
    div = profile.divergence
    active, working = div.active_threads_per_warp, div.working_lanes
    if active is None or working is None:
        return None
    ceiling = lane_ceiling(profile) or WARP
    return {"block_size": WARP - ceiling, "divergence": max(0.0, ceiling - active),
            "predication": max(0.0, active - working)}


def _lost(cause: str) -> Callable[[KernelReport], float | None]:
    def read(profile: KernelReport) -> float | None:
        lost = lanes_lost(profile)
        return lost[cause] if lost is not None else None
    return read


evidence.MEASURES["lane_ceiling"] = ("lanes a block's threads fill per warp (of 32)",
                                     lane_ceiling)
evidence.MEASURES["divergent_branches"] = (
    "divergent branch targets", lambda p: p.divergence.divergent_branches)
for _cause in CAUSES:
    evidence.MEASURES[f"lanes_lost_to_{_cause.replace('block_size', 'the_block_size')}"] = (
        f"lanes per warp instruction lost to {_cause.replace('_', ' ')}", _lost(_cause))


def _measure(cause: str) -> str:
    return f"lanes_lost_to_{cause.replace('block_size', 'the_block_size')}"


_TITLES = {
    "block_size": "the {threads}-thread blocks fill only {ceiling} lanes of each warp",
    "divergence": "divergent branches run the paths of a warp one after another",
    "predication": "lanes are active but predicated off (threads with no work left still "
                   "issue with their warp)",
}


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    div = profile.divergence
    lanes = div.working_lanes
    lost = lanes_lost(profile)
    if lanes is None or lost is None or lanes >= BAD_LANES:
        return []
    cause = max(CAUSES, key=lambda c: (lost[c], -CAUSES.index(c)))
    metrics: dict[str, float | str] = {"working_lanes": lanes, "cause": cause,
                                       **{f"lost_{c}": lost[c] for c in CAUSES}}
    if div.active_threads_per_warp is not None:
        metrics["active_lanes"] = div.active_threads_per_warp
    parts = [f"{fmt(div.active_threads_per_warp or 0.0)} active threads per warp instruction"]
    if div.not_predicated_off_threads_per_warp is not None:
        parts.append(f"{fmt(div.not_predicated_off_threads_per_warp)} not predicated off")
    if div.branch_efficiency_pct is not None:
        parts.append(f"branch efficiency {fmt(div.branch_efficiency_pct)}%")
    if div.divergent_branches is not None:
        parts.append(f"{fmt(div.divergent_branches, 0)} divergent branches")
    split = ", ".join(f"{c.replace('_', ' ')} {fmt(lost[c])}" for c in CAUSES if lost[c] >= 0.05)
    ceiling = lane_ceiling(profile) or WARP
    title = _TITLES[cause].format(threads=fmt(profile.launch.block_size or 0.0, 0),
                                  ceiling=fmt(ceiling))
    return [Finding(
        rule=NAME, kind="bad",
        title=f"Warps run with only {fmt(lanes)} of 32 lanes doing work: {title}.",
        text="; ".join(parts) + f"; lanes lost per warp instruction to {split} ({SECTION}). "
        f"Only {fmt(100 * lanes / WARP)}% of the lanes the SM issues for do work, so every "
        "throughput figure overstates useful work by the same factor.",
        section=SECTION,
        weight=100.0 * (1.0 - lanes / WARP),
        metrics=metrics,
        evidence=(ev(profile, "working_lanes", "<", BAD_LANES),
                  ev(profile, _measure(cause), ">=", max(lost[c] for c in CAUSES))),
    )]
