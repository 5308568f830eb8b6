"""ncu's own rule results: its OPT and WARN messages with their estimated speedups.

Our rules explain the common cases in the chain's terms; ncu's rules cover everything else
(L2 compression, issue-slot use, ...). They are reported as information, largest estimated
speedup first, with ncu's message verbatim.
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.report import KernelReport, RuleResult

NAME = "ncu_rules"
MIN_SPEEDUP = 1.0  # percent; ncu attaches near-zero estimates to many rules

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


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    chosen = [
        r for r in profile.rules_for_pages
        if r.type in ("OPT", "WARN") and r.message
        and (r.speedup_pct is None or r.speedup_pct >= MIN_SPEEDUP)
    ]
    chosen.sort(key=lambda r: -(r.speedup_pct or 0.0))
    return [_finding(r) for r in chosen]
