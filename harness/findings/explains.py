"""Findings that explain or outweigh others, applied after every rule ran:

- a dominant operation (warp primitives, synchronization, atomics, DSMEM traffic) is what keeps
  the busiest pipe busy: the pipe finding becomes an aside that says so;
- unequal work between SMs explains achieved occupancy short of theoretical;
- a tensor-core kernel near its tensor pipe's peak has little left to win: its other problems
  become asides that say how little; the low occupancy of a WGMMA kernel is its design.
"""

from __future__ import annotations

import dataclasses

from harness.findings import (
    atomics,
    clusters,
    imbalance,
    occupancy,
    pipes,
    synchronization,
    tensor_core,
    warp_primitives,
    waves,
)
from harness.findings.model import Finding
from harness.report import KernelReport

DOMINANCE = (warp_primitives.NAME, synchronization.NAME, atomics.NAME, clusters.NAME)
# findings that never step aside for the tensor peak: the peak itself, the bound, the trend
_KEEP_AT_PEAK = (tensor_core.NAME, "bound", "progress")


def _aside(finding: Finding, why: str) -> Finding:
    """The finding as an aside that says why; its fix ideas go: the cause has its own, or
    there is too little left to win."""
    return dataclasses.replace(finding, kind="info", title=f"{finding.title.rstrip('.')} — {why}.",
                               fixes=())


def dominance_explains_pipe(findings: list[Finding]) -> list[Finding]:
    """The busiest pipe's "bad" finding steps aside when a dominant operation explains it."""
    cause = next((f for f in findings if f.kind == "bad" and f.rule in DOMINANCE), None)
    if cause is None:
        return findings
    what = cause.title.split(":")[0].lower()
    return [_aside(f, f"{what}, which keeps it busy") if f.rule == pipes.NAME and f.kind == "bad"
            else f for f in findings]


def imbalance_explains_occupancy(findings: list[Finding]) -> list[Finding]:
    """Achieved occupancy short of theoretical is what unequal SMs look like: the imbalance
    finding names the cause and carries the gap's estimated gain."""
    cause = next((f for f in findings if f.kind == "bad" and f.rule == imbalance.NAME), None)
    if cause is None:
        return findings
    gap = [f for f in findings if f.rule == occupancy.NAME and f.kind == "bad"
           and f.title.startswith("Achieved occupancy")]
    gains = [f.speedup_pct for f in gap if f.speedup_pct is not None]
    out = []
    for f in findings:
        if f in gap:
            f = _aside(f, "the SMs' unequal work explains it")
        elif f is cause and gains:
            f = dataclasses.replace(f, speedup_pct=max([*gains, f.speedup_pct or 0.0]))
        out.append(f)
    return out


def small_grid_explains_occupancy(findings: list[Finding]) -> list[Finding]:
    """A grid smaller than one wave never fills the SMs: what limits their warps, and how far
    achieved falls short, say nothing the grid does not; the grid is the problem to name."""
    if not any(f.kind == "bad" and f.rule == waves.NAME and "of one wave" in f.title
               for f in findings):
        return findings
    return [_aside(f, "the grid fills less than one wave, so this limit does not bind")
            if f.rule == occupancy.NAME and f.kind == "bad" else f for f in findings]


def tail_explains_occupancy(findings: list[Finding]) -> list[Finding]:
    """Achieved occupancy short of theoretical is what a partial last wave looks like: the
    tail finding names the cause."""
    if not any(f.kind == "bad" and f.rule == waves.NAME and f.title.startswith("Tail")
               for f in findings):
        return findings
    return [_aside(f, "the partial last wave explains it")
            if f.rule == occupancy.NAME and f.kind == "bad" and f.title.startswith("Achieved")
            else f for f in findings]


def tensor_peak_outweighs(findings: list[Finding], profile: KernelReport) -> list[Finding]:
    """Near the tensor pipe's peak, every other problem can win back at most what the pipe has
    left. Low theoretical occupancy is the design of a WGMMA kernel (a few warpgroups per SM,
    fed asynchronously), and of any tensor-core kernel at the peak."""
    peak = tensor_core.near_peak(profile)
    wgmma = tensor_core.uses_wgmma(profile)
    if peak is None and not wgmma:
        return findings
    design = ("by design: a WGMMA kernel keeps the tensor cores busy with a few warpgroups per "
              "SM, fed asynchronously, not with many warps" if wgmma else
              f"by design: few warps keep the tensor pipe at {peak:.1f}% of its peak")
    out = []
    for f in findings:
        if f.kind == "bad" and f.rule not in _KEEP_AT_PEAK:
            if f.rule == occupancy.NAME and f.title.startswith("Theoretical"):
                f = _aside(f, design)
            elif peak is not None:
                f = _aside(f, f"at most {100.0 - peak:.1f}% to win: the tensor pipe is at "
                           f"{peak:.1f}% of its peak")
        out.append(f)
    return out
