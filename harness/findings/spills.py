"""Register spills: local-memory loads and stores the compiler added (Memory Workload Analysis).

Local memory lives in DRAM behind L1; a kernel that spills pays global-memory latency for
values it meant to keep in registers.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "spills"
SECTION = "Memory Workload Analysis"


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    spills = profile.local_memory_spill_requests
    if not spills:
        spills = profile.local_memory.spill_instructions
    if not spills:
        return []  # None: not collected; 0: nothing to say beyond the bonus table
    regs = profile.launch.registers_per_thread
    share = None
    if profile.executed_instructions:
        share = 100.0 * spills / profile.executed_instructions
    return [
        Finding(
            rule=NAME,
            kind="bad",
            title=f"Registers spill to local memory: {fmt(spills)} local loads/stores executed"
            + (f" at {fmt(regs, 0)} registers per thread." if regs is not None else "."),
            text=f"{fmt(spills)} local-memory instructions (LDL/STL) were executed"
            + (f", {fmt(share, 2)}% of all instructions" if share is not None else "")
            + f" ({SECTION}).",
            section=SECTION,
            weight=min(100.0, share or 10.0),
            metrics={"spills": spills},
            evidence=(ev(profile, "spill_instructions", ">", 0.0),),
        )
    ]
