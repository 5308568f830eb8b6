"""ncu's figures that cannot be read as they stand: a share of peak over 100% (GPU Speed Of
Light Throughput, Compute Workload Analysis).

A throughput is a share of the unit's peak; ncu can report one over 100% (a unit measured over
its own active cycles, a sub-unit counted against another's peak). Such a figure is no
utilization: the page quotes it with that reason, and no verdict rests on it (the bound and the
busiest memory unit are judged by the figures that can be read). ncu's N-way shared-memory
figure is quoted the same way by the bank-conflicts rule.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "odd_figures"
SECTION = "GPU Speed Of Light Throughput"
PEAK = 100.0

# measure -> ncu's words for the figure
THROUGHPUTS = {
    "compute_pct": "Compute (SM) Throughput",
    "memory_pct": "Memory Throughput",
    "dram_pct": "DRAM Throughput",
    "l1_pct": "L1/TEX Cache Throughput",
    "l2_pct": "L2 Cache Throughput",
}


def over_peak(profile: KernelReport) -> list[tuple[str, str, float]]:
    """(measure, ncu's words, value) of every throughput over 100% of its peak."""
    from harness.findings.evidence import read

    found = [(m, words, read(profile, m)) for m, words in THROUGHPUTS.items()]
    found += [(f"pipe:{u.pipe}", f"{u.label} pipe", u.pct) for u in profile.pipes]
    return [(m, w, v) for m, w, v in found if v is not None and v > PEAK]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    seen: set[str] = set()
    findings = []
    for measure, words, value in over_peak(profile):
        if measure in seen:
            continue
        seen.add(measure)
        findings.append(Finding(
            rule=NAME, kind="info",
            title=f"ncu reports {words} at {fmt(value)}% of its peak: a share of the peak over "
            "100% cannot be read as one, so no verdict here rests on it.",
            text=f"{words} {fmt(value)}%: a unit measured over its own active cycles, or a "
            "sub-unit counted against another's peak, can read over 100%; it is not how busy "
            f"the unit was ({SECTION}).",
            section=SECTION, metrics={"odd_figure": measure, "value": value},
            evidence=(ev(profile, measure, ">", PEAK),)))
    return findings
