"""Uncoalesced global memory access: sectors moved beyond what the bytes asked for need.

ncu's UncoalescedGlobalAccess rule compares, instruction by instruction, the sectors a kernel
moved with the ideal, from costly SASS-patched replays. Memory Workload Analysis says nearly the
same over the whole kernel, loads and stores apart (sectors moved, the bytes of each sector some
thread asked for, warp instructions, each lane's access width from the opcodes), and this
finding reads that, so a page says the same whether `pages` or `full` recorded it. Accesses are
uncoalesced only where even the most generous ideal leaves `BAD_EXCESS`, coalesced under
`CLEAN_EXCESS`, and nothing is said in between. cp.async loads (LDGSTS) have their excess bounded
from below only (`AsyncCopies`): they can be called uncoalesced, never coalesced, and LDG loads
beside them are not judged. Shared memory's excess wavefronts are the bank conflicts finding's.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import ASYNC_LOADS, AsyncCopies, KernelReport

NAME = "coalescing"
SECTION = "Memory Workload Analysis"
BAD_EXCESS = 10.0  # percent of sectors beyond the ideal pattern
CLEAN_EXCESS = 1.0  # below this the accesses count as coalesced (partial sectors at the edges)


# What to do about the direction that moves the excess: (fix, what if)
_ADVICE = {
    "loads": ("Neighbouring threads of a warp read addresses far apart, so each 32-byte sector "
              "delivers only a few useful bytes.",
              "What if consecutive threads (threadIdx.x) read consecutive addresses, so a "
              "warp's 32 loads share four sectors?"),
    "stores": ("Neighbouring threads of a warp write addresses far apart, so each 32-byte "
               "sector carries only a few useful bytes.",
               "What if consecutive threads (threadIdx.x) wrote consecutive addresses, so a "
               "warp's 32 stores share four sectors?"),
    "loads and stores": ("Neighbouring threads of a warp read and write addresses far apart, "
                         "so each 32-byte sector moves only a few useful bytes.",
                         "What if consecutive threads (threadIdx.x) walked consecutive "
                         "addresses, so a warp's 32 accesses share four sectors?"),
    ASYNC_LOADS: ("A warp's cp.async copies touch more 32-byte sectors than their bytes "
                  "fill: the lanes' addresses are scattered or straddle sector boundaries.",
                  "What if each warp's cp.async copied one contiguous, sector-aligned run of "
                  "global memory (consecutive threads, consecutive 16-byte chunks)?"),
    f"{ASYNC_LOADS} and stores": (
        "Neighbouring threads of a warp copy (cp.async) and write global addresses far apart or "
        "across sector boundaries, so the sectors moved exceed the bytes used.",
        "What if consecutive threads copied and wrote consecutive, sector-aligned addresses, "
        "so that each warp's accesses fill whole 32-byte sectors?"),
}


def _bad_directions(profile: KernelReport) -> list[str]:
    return [name for name, accesses in sorted(profile.coalescing.directions().items())
            if (accesses.least_excess_pct or 0.0) >= BAD_EXCESS]


def _detail(profile: KernelReport) -> str:
    """" By direction: loads: ...; stores: ...." """
    parts = []
    for name, a in sorted(profile.coalescing.directions().items()):
        if isinstance(a, AsyncCopies):  # a bound: no bytes per sector counted
            parts.append(f"{name}: at least {fmt(a.excess_pct or 0.0)}% of "
                         f"{fmt(a.sectors or 0.0, 0)} sectors excess (full warps would need "
                         f"{fmt(a.most_ideal_sectors or 0.0, 0)})")
        else:
            parts.append(f"{name}: {fmt(a.excess_pct or 0.0)}% of {fmt(a.sectors or 0.0, 0)} "
                         f"sectors excess, {fmt(a.bytes_per_sector)} of 32 bytes per sector used")
    return f" By direction: {'; '.join(parts)}." if parts else ""


def _unjudged(profile: KernelReport) -> tuple[str, str]:
    """(" (...; cp.async loads not judged)" for a title, sentences for the text): what moved
    sectors the counters could not judge, and why."""
    missed = profile.coalescing.unjudged()
    title = f"; {' and '.join(missed)} not judged" if missed else ""
    return title, "".join(f" The {name} were not judged: {why}." for name, why in missed.items())


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    co = profile.coalescing
    excess, sectors = co.global_excess_pct, co.global_sectors
    if excess is None or not sectors:
        return []  # not collected, or no global load or store the counters could judge
    judged = " and ".join(sorted(co.directions()))
    uncoalesced = (co.global_least_excess_pct or 0.0) >= BAD_EXCESS
    bad = _bad_directions(profile)  # of those, the directions that are uncoalesced themselves
    direction = " and ".join(bad) or judged
    title_note, text_note = _unjudged(profile)
    metrics: dict[str, float | str] = {
        "excess_pct": excess, "excessive_sectors": co.global_excessive_sectors or 0.0,
        "sectors": sectors, "direction": direction,
        "least_excess_pct": co.global_least_excess_pct or 0.0,
    }
    # cp.async's excess is a bound from below, so the sum is one too
    least = "at least " if co.bounded_only() else ""
    text = (f"Global {judged} move {least}{fmt(co.global_excessive_sectors or 0.0, 0)} "
            f"excessive sectors, {fmt(excess)}% of the {fmt(sectors, 0)} sectors moved "
            f"({SECTION}).{_detail(profile)}{text_note}")
    if uncoalesced:
        # cp.async loads are never called coalesced, not even beside worse stores
        others = [name for name in co.directions() if name not in bad and name != ASYNC_LOADS]
        which = f"Global {direction} are uncoalesced" + (
            f" ({others[0]} are not)" if others else "")
        return [Finding(
            rule=NAME,
            kind="bad",
            title=f"{which}: {least}{fmt(excess)}% of the sectors moved are excess.",
            text=text,
            section=SECTION,
            weight=excess,
            metrics=metrics,
            evidence=(ev(profile, "global_excess_pct", ">=", BAD_EXCESS),),
        )]
    if excess < CLEAN_EXCESS and not co.bounded_only():
        return [Finding(rule=NAME, kind="good", title=f"Global {judged} are coalesced "
                        f"({fmt(excess, 2)}% excessive sectors{title_note}).", text=text,
                        section=SECTION, metrics=metrics,
                        evidence=(ev(profile, "global_excess_pct", "<", CLEAN_EXCESS),))]
    return []
