"""Uncoalesced memory access: excess global sectors and excess shared wavefronts.

ncu's UncoalescedGlobalAccess / UncoalescedSharedAccess rules (Source Counters) compare the
sectors (wavefronts) a kernel moved with the ideal for its access sizes. The per-instruction
source counters (`memory_l2_theoretical_sectors_global[_ideal]` by PC) say which of the
loads and the stores move the excess.
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.report.kernel_profile import KernelProfile

NAME = "coalescing"
SECTION = "Source Counters"
BAD_EXCESS = 10.0  # percent of sectors beyond the ideal pattern
SHARED_BAD_EXCESS = 5.0
_DIRECTION = {"LDG": "loads", "LD": "loads", "STG": "stores", "ST": "stores",
              "ATOM": "atomics", "ATOMG": "atomics", "RED": "atomics", "REDG": "atomics"}


def excess_by_direction(profile: KernelProfile) -> dict[str, tuple[float, float]]:
    """"loads"/"stores"/"atomics" -> (sectors, excess sectors) over the global accesses of
    that direction, from the per-instruction source counters; {} when not collected."""
    totals: dict[str, list[float]] = {}
    for instruction in profile.sass:
        direction = _DIRECTION.get(instruction.opcode)
        if direction is None or instruction.global_sectors is None:
            continue
        ideal = instruction.global_ideal_sectors
        excess = max(instruction.global_sectors - ideal, 0.0) if ideal is not None else 0.0
        entry = totals.setdefault(direction, [0.0, 0.0])
        entry[0] += instruction.global_sectors
        entry[1] += excess
    return {d: (t[0], t[1]) for d, t in totals.items()}


def _which(profile: KernelProfile) -> tuple[str, str]:
    """("stores", " Stores move 94% of the excess: ...") naming the uncoalesced direction."""
    split = excess_by_direction(profile)
    excess_total = sum(e for _, e in split.values())
    if not excess_total:
        return "accesses", ""
    bad = [d for d, (sectors, excess) in split.items()
           if sectors and 100.0 * excess / sectors >= BAD_EXCESS]
    parts = [f"{d}: {fmt(100.0 * e / s)}% of {fmt(s, 0)} sectors excess"
             for d, (s, e) in sorted(split.items()) if s]
    detail = f" By direction: {'; '.join(parts)}."
    if len(bad) == 1:
        return bad[0], detail
    return "accesses", detail


def check(profile: KernelProfile, previous: KernelProfile | None = None) -> list[Finding]:
    co = profile.coalescing
    findings: list[Finding] = []
    excess = co.global_excess_pct
    if excess is not None and co.global_sectors:
        metrics: dict[str, float | str] = {
            "excess_pct": excess, "excessive_sectors": co.global_excessive_sectors or 0.0,
            "sectors": co.global_sectors,
        }
        direction, detail = _which(profile)
        metrics["direction"] = direction
        text = (f"Global accesses move {fmt(co.global_excessive_sectors or 0.0)} excessive "
                f"sectors, {fmt(excess)}% of the {fmt(co.global_sectors)} sectors requested "
                f"({SECTION}).{detail}")
        if excess >= BAD_EXCESS:
            which = {"loads": "Global loads are uncoalesced (stores are not)",
                     "stores": "Global stores are uncoalesced (loads are not)",
                     "atomics": "Global atomics are uncoalesced"}.get(
                         direction, "Global memory accesses are uncoalesced")
            findings.append(
                Finding(
                    rule=NAME,
                    kind="bad",
                    title=f"{which}: {fmt(excess)}% of the sectors moved are excess.",
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
