"""ncu's own rule results: its OPT and WARN messages with their estimated speedups, judged.

Our rules explain the common cases in the chain's terms; ncu's rules cover everything else
(L2 compression, issue-slot use, ...). A rule is shown as information (largest estimated
speedup first, ncu's message verbatim) only when what it rests on matters for this kernel:
the accesses it speaks of are a real share of the kernel's own, and its topic is the unit that
binds. The others are set aside (`ncu_set_aside`) with the reason, for an "ncu also says" list.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.findings import bound as bound_rule
from harness.findings import waves as waves_rule
from harness.findings.model import Finding, fmt
from harness.report import KernelReport, RuleResult

NAME = "ncu_rules"
MIN_SPEEDUP = 1.0  # percent; ncu attaches near-zero estimates to many rules
# percent of the kernel's global memory instructions: a rule about one direction (loads or
# stores) matters from this share of them on; a few stores beside millions of loads do not
MIN_DIRECTION_SHARE = 5.0
# percent of executed instructions: a rule about local memory matters from here on
MIN_LOCAL_SHARE = 1.0
# ncu rules about the compute pipes and issue slots: moot while memory binds the kernel
COMPUTE_RULES = ("IssueSlotUtilization", "FPInstructions", "SOLFPRoofline")
COMPUTE_TITLES = ("Low Utilization", "High Utilization", "Very High Utilization")


@dataclass(frozen=True)
class SetAside:
    """One of ncu's results that does not matter for this kernel, and why."""

    title: str  # "ncu OPT: Low Compression Rate (ncu estimates up to 80.3% speedup)"
    reason: str


def _global_share(profile: KernelReport, kind: str) -> tuple[float, float] | None:
    """(share in percent of the kernel's global memory instructions, count) of one direction."""
    widths = profile.memory_widths
    loads, stores = widths.executed("global", "load"), widths.executed("global", "store")
    if not loads + stores:
        return None
    count = stores if kind == "store" else loads
    return 100.0 * count / (loads + stores), count


def _compute_rule(rule: RuleResult) -> bool:
    return rule.name in COMPUTE_RULES or (rule.name == "HighPipeUtilization"
                                          and rule.title in COMPUTE_TITLES)


def why_not(rule: RuleResult, profile: KernelReport) -> str | None:
    """Why an ncu result does not matter for this kernel; None when it does."""
    title = (rule.title or "").lower()
    direction = ("store" if "store" in title or rule.name == "MemoryL2Compression"
                 else "load" if "load" in title else None)
    if "local" in title:
        local = profile.local_memory.instructions
        total = sum(o.executed for o in profile.instruction_mix)
        if total and 100.0 * local / total < MIN_LOCAL_SHARE:
            return (f"about local memory: {fmt(local, 0)} local loads and stores, "
                    f"{fmt(100.0 * local / total, 2)}% of executed instructions")
    elif direction is not None and rule.name in ("MemoryCacheAccessPattern",
                                                 "MemoryL2Compression"):
        share = _global_share(profile, direction)
        # stores through TMA or bulk copies are not STG: without STG the share is unknown
        if share is not None and share[1] > 0 and share[0] < MIN_DIRECTION_SHARE:
            # compressible memory is written memory: the rule weighs the kernel's stores
            return (f"about global {direction}s: {fmt(share[1], 0)} executed, "
                    f"{fmt(share[0], 2)}% of the kernel's global memory instructions")
    if _compute_rule(rule) and bound_rule.classify_bound(profile) == "memory":
        unit = bound_rule.busiest_memory_unit(profile)
        where = f" ({unit[0]} at {fmt(unit[1])}% of peak)" if unit else ""
        return f"about the compute pipes and issue slots; memory binds the kernel{where}"
    if rule.name == "LaunchConfiguration" and rule.title == "Tail Effect":
        waves = profile.launch.waves_per_sm
        if waves is not None and waves >= 1.0:
            idle = waves_rule.idle_share_pct(waves)
            if idle < waves_rule.BAD_IDLE:
                return (f"the partial last wave of {fmt(waves, 2)} leaves {fmt(idle)}% of SM "
                        "time idle (ncu's estimate assumes every block takes as long)")
    return None

# ncu section identifiers -> the section titles ncu prints
SECTION_TITLES = {
    "SpeedOfLight": "GPU Speed Of Light Throughput",
    "SpeedOfLight_RooflineChart": "GPU Speed Of Light Roofline Chart",
    "ComputeWorkloadAnalysis": "Compute Workload Analysis",
    "MemoryWorkloadAnalysis": "Memory Workload Analysis",
    "MemoryWorkloadAnalysis_Chart": "Memory Workload Analysis Chart",
    "MemoryWorkloadAnalysis_Tables": "Memory Workload Analysis Tables",
    "SchedulerStats": "Scheduler Statistics",
    "WarpStateStats": "Warp State Statistics",
    "InstructionStats": "Instruction Statistics",
    "LaunchStats": "Launch Statistics",
    "Occupancy": "Occupancy",
    "SourceCounters": "Source Counters",
    "WorkloadDistribution": "GPU and Memory Workload Distribution",
}


def section_title(identifier: str | None) -> str:
    if not identifier:
        return "ncu rules"
    return SECTION_TITLES.get(identifier, identifier)


def _finding(rule: RuleResult) -> Finding:
    speedup = rule.speedup_pct
    est = f" (ncu estimates up to {fmt(speedup)}% speedup)" if speedup is not None else ""
    section = section_title(rule.section)
    title = rule.title or rule.name
    return Finding(
        rule=NAME,
        kind="info",
        title=f"ncu {rule.type}: {title}{est}.",
        text=f"{rule.message} ({section}).",
        section=section,
        weight=speedup or 0.0,
        metrics={"ncu_rule": rule.name, "ncu_title": title,
                 "speedup_pct": speedup if speedup is not None else -1.0},
    )


def _candidates(profile: KernelReport) -> list[RuleResult]:
    chosen = [
        r for r in profile.rules_for_pages
        if r.type in ("OPT", "WARN") and r.message
        and (r.speedup_pct is None or r.speedup_pct >= MIN_SPEEDUP)
    ]
    return sorted(chosen, key=lambda r: -(r.speedup_pct or 0.0))


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    return [_finding(r) for r in _candidates(profile) if why_not(r, profile) is None]


def ncu_set_aside(profile: KernelReport) -> list[SetAside]:
    """ncu's results that do not matter for this kernel, each with the reason."""
    out = []
    for rule in _candidates(profile):
        reason = why_not(rule, profile)
        if reason is not None:
            out.append(SetAside(_finding(rule).title.rstrip("."), reason))
    return out
