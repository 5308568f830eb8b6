"""Divergence and predication: how many of a warp's 32 lanes do the work (Warp State
Statistics, Instruction Statistics, Source Counters).

`smsp__thread_inst_executed_per_inst_executed.ratio` counts active lanes per executed warp
instruction; lanes can also be active but predicated off
(`smsp__thread_inst_executed_pred_on_per_inst_executed.ratio`). Divergent branches serialize
the paths of a warp, so the SM's throughput counters overstate useful work by 32 / lanes.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "divergence"
SECTION = "Warp State Statistics"
WARP = 32.0
BAD_LANES = 24.0  # fewer working lanes than this (a quarter idle) is a problem
MOST_IDLE_LANES = 16.0  # fewer than this: most lanes idle; "good" throughput is qualified


def working_lanes(profile: KernelReport) -> float | None:
    return profile.divergence.working_lanes


def most_lanes_idle(profile: KernelReport) -> bool:
    """Whether fewer than half of a warp's lanes do work, on average."""
    lanes = working_lanes(profile)
    return lanes is not None and lanes < MOST_IDLE_LANES


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    div = profile.divergence
    lanes = div.working_lanes
    if lanes is None:
        return []
    active = div.active_threads_per_warp
    metrics: dict[str, float | str] = {"working_lanes": lanes}
    parts = []
    if active is not None:
        parts.append(f"{fmt(active)} active threads per warp instruction")
        metrics["active_lanes"] = active
    if div.not_predicated_off_threads_per_warp is not None:
        parts.append(f"{fmt(div.not_predicated_off_threads_per_warp)} not predicated off")
    if div.branch_efficiency_pct is not None:
        parts.append(f"branch efficiency {fmt(div.branch_efficiency_pct)}%")
        metrics["branch_efficiency_pct"] = div.branch_efficiency_pct
    if div.divergent_branches:
        parts.append(f"{fmt(div.divergent_branches, 0)} divergent branches")
    text = "; ".join(parts) + f" ({SECTION})."
    if lanes >= BAD_LANES:
        return []
    cause = ("divergent branches run the paths of a warp one after another"
             if active is not None and active < BAD_LANES
             else "lanes are active but predicated off (threads with no work left still "
             "issue with their warp)")
    return [Finding(
        rule=NAME, kind="bad",
        title=f"Warps run with only {fmt(lanes)} of 32 lanes doing work: {cause}.",
        text=text,
        section=SECTION,
        fix_title="Keep the lanes of a warp on one path.",
        fix_text=f"Only {fmt(100 * lanes / WARP)}% of the lanes the SM issues for do work, so "
        "every throughput figure overstates useful work by the same factor.",
        what_if="What if the work were regrouped so that threads taking the same path sit in "
        "the same warp (sort or bin by branch, or branch on warp-uniform values)?",
        weight=100.0 * (1.0 - lanes / WARP),
        metrics=metrics,
        evidence=(ev(profile, "working_lanes", "<", BAD_LANES),),
    )]
