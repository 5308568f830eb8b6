"""Where a memory-bound kernel's data comes from: DRAM or L2 (GPU Speed Of Light Throughput,
Memory Workload Analysis).

A streaming kernel near the DRAM peak can only go faster by moving fewer bytes; one whose
working set stays in L2 (high L2 throughput, low DRAM throughput, high L2 hit rate) is bound
by L2 bandwidth instead, about three times the DRAM's on Hopper, and gains from keeping data
even closer (shared memory, registers) or from fewer accesses.
"""

from __future__ import annotations

from harness.findings.bound import classify_bound
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "memory_level"
SECTION = "GPU Speed Of Light Throughput"
BUSY = 60.0  # percent of peak: DRAM binds
L2_BUSY = 40.0  # percent of peak: L2 carries the traffic ...
L2_OVER_DRAM = 4.0  # ... at this many times the DRAM's share of its peak: the data stays in L2
L2_HIT = "lts__t_sector_hit_rate.pct"


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    sol = profile.speed_of_light
    dram, l2 = sol.dram_throughput_pct, sol.l2_throughput_pct
    compute = sol.compute_throughput_pct
    if dram is None or l2 is None or classify_bound(profile) is None:
        return []
    if compute is not None and (sol.memory_throughput_pct or 0.0) < compute:
        return []  # compute is the busier side: where the bytes come from matters less
    hit = profile.metric(L2_HIT)
    hit_text = f", L2 hit rate {fmt(hit)}%" if hit is not None else ""
    numbers = f"DRAM throughput {fmt(dram)}%, L2 throughput {fmt(l2)}%{hit_text}"
    metrics: dict[str, float | str] = {"dram_pct": dram, "l2_pct": l2}
    if dram >= BUSY and dram >= l2:
        return [Finding(
            rule=NAME, kind="info",
            title=f"DRAM-bound streaming: DRAM runs at {fmt(dram)}% of its peak bandwidth.",
            text=f"The data comes from DRAM ({numbers}) ({SECTION}); only fewer bytes moved "
            "(reuse, smaller types, fused kernels) makes it faster.",
            section=SECTION, weight=dram, metrics={**metrics, "level": "DRAM"},
            evidence=(ev(profile, "dram_pct", ">=", BUSY),),
        )]
    if l2 >= L2_BUSY and l2 >= L2_OVER_DRAM * dram:
        return [Finding(
            rule=NAME, kind="info",
            title=f"The working set stays in L2: L2 runs at {fmt(l2)}% of its peak, DRAM at "
            f"{fmt(dram)}%.",
            text=f"The data comes from L2, not DRAM ({numbers}) ({SECTION}); L2 latency and "
            "bandwidth are what the loads wait for, so keeping reused data in shared memory "
            "or registers, or touching it fewer times, is what helps.",
            section=SECTION, weight=l2, metrics={**metrics, "level": "L2"},
            evidence=(ev(profile, "l2_pct", ">=", L2_BUSY),),
        )]
    return []
