"""Local memory that is not register spilling: per-thread arrays the compiler could not keep
in registers, usually because they are indexed with values known only at run time (Memory
Workload Analysis).

ncu counts all local loads and stores (`sass__inst_executed_local_{loads,stores}`) and, among
them, those the compiler added to spill registers (`sass__inst_executed_register_spilling`).
Local instructions that are not spills belong to the program's own arrays (or stack).
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "local_arrays"
SECTION = "Memory Workload Analysis"
ARRAY_SHARE = 50.0  # percent of local instructions that are not spills: the arrays dominate


def array_instructions(profile: KernelReport) -> float:
    """Local loads and stores that are not register spills."""
    local = profile.local_memory
    return max(local.instructions - (local.spill_instructions or 0.0), 0.0)


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    local = profile.local_memory
    total = local.instructions
    if not total:
        return []
    arrays = array_instructions(profile)
    share = 100.0 * arrays / total
    if share < ARRAY_SHARE:
        return []  # spills, which the spills rule explains
    of_all = (f", {fmt(100.0 * total / profile.executed_instructions, 2)}% of all "
              "instructions" if profile.executed_instructions else "")
    return [Finding(
        rule=NAME, kind="bad",
        title=f"A per-thread array lives in local memory: {fmt(arrays, 0)} local loads and "
        f"stores that are not register spills.",
        text=f"{fmt(local.load_instructions or 0.0, 0)} local loads and "
        f"{fmt(local.store_instructions or 0.0, 0)} local stores{of_all}; "
        f"{fmt(local.spill_instructions or 0.0, 0)} of them spills ({SECTION}).",
        section=SECTION,
        weight=min(100.0, 100.0 * total / profile.executed_instructions)
        if profile.executed_instructions else 10.0,
        metrics={"local_instructions": total, "array_instructions": arrays},
        evidence=(ev(profile, "local_instructions", ">", 0.0),),
    )]
