"""Uncoalesced memory access: excess global sectors and excess shared wavefronts.

ncu's UncoalescedGlobalAccess / UncoalescedSharedAccess rules (Source Counters) compare the
sectors (wavefronts) a kernel moved with the ideal for its access sizes.
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.report.kernel_profile import KernelProfile

NAME = "coalescing"
SECTION = "Source Counters"
BAD_EXCESS = 10.0  # percent of sectors beyond the ideal pattern
SHARED_BAD_EXCESS = 5.0


def check(profile: KernelProfile, previous: KernelProfile | None = None) -> list[Finding]:
    co = profile.coalescing
    findings: list[Finding] = []
    excess = co.global_excess_pct
    if excess is not None and co.global_sectors:
        metrics: dict[str, float | str] = {
            "excess_pct": excess, "excessive_sectors": co.global_excessive_sectors or 0.0,
            "sectors": co.global_sectors,
        }
        text = (f"Global accesses move {fmt(co.global_excessive_sectors or 0.0)} excessive "
                f"sectors, {fmt(excess)}% of the {fmt(co.global_sectors)} sectors requested "
                f"({SECTION}).")
        if excess >= BAD_EXCESS:
            findings.append(
                Finding(
                    rule=NAME,
                    kind="bad",
                    title=f"Global memory accesses are uncoalesced: {fmt(excess)}% of the "
                    "sectors moved are excess.",
                    text=text,
                    section=SECTION,
                    fix_title="Coalesce global memory accesses.",
                    fix_text="Neighbouring threads of a warp read addresses far apart, so each "
                    "32-byte sector delivers only a few useful bytes.",
                    what_if="What if consecutive threads (threadIdx.x) walked consecutive "
                    "addresses, so a warp's 32 loads share four sectors?",
                    weight=excess,
                    metrics=metrics,
                )
            )
        elif excess == 0:
            findings.append(Finding(rule=NAME, kind="good", title="Global memory accesses are "
                                    "fully coalesced (no excessive sectors).", text=text,
                                    section=SECTION, metrics=metrics))
    if co.shared_wavefronts and co.shared_excessive_wavefronts is not None:
        share = 100.0 * co.shared_excessive_wavefronts / co.shared_wavefronts
        if share >= SHARED_BAD_EXCESS:
            findings.append(
                Finding(
                    rule=NAME,
                    kind="bad",
                    title=f"Shared-memory accesses are uncoalesced: {fmt(share)}% of shared "
                    "wavefronts are excess.",
                    text=f"Shared accesses take {fmt(co.shared_excessive_wavefronts)} excessive "
                    f"wavefronts, {fmt(share)}% of the {fmt(co.shared_wavefronts)} total "
                    f"({SECTION}).",
                    section=SECTION,
                    fix_title="Coalesce shared-memory accesses.",
                    fix_text="Each excessive wavefront replays a shared access.",
                    what_if="What if each warp's shared accesses covered one contiguous "
                    "128-byte row?",
                    weight=share,
                    metrics={"shared_excess_pct": share},
                )
            )
    return findings
