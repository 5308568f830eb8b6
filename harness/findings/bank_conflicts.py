"""Shared-memory bank conflicts, loads and stores apart (Memory Workload Analysis).

As in ncu's SharedMemoryConflicts rule: the N-way figure is wavefronts per shared request,
and the cost is the share of all shared wavefronts that are bank conflicts.
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.report import BankConflictStats, KernelReport

NAME = "bank_conflicts"
SECTION = "Memory Workload Analysis"
BAD_SHARE = 5.0  # percent of wavefronts that are conflicts before we call it a problem
CLEAN_SHARE = 1.0  # below this the accesses count as conflict-free


def _one(direction: str, stats: BankConflictStats) -> list[Finding]:
    ways, share = stats.ways, stats.conflict_share_pct
    if not stats.requests or ways is None or share is None or stats.conflicts is None:
        return []  # no shared accesses of this direction, or not collected
    metrics: dict[str, float | str] = {
        "direction": direction, "ways": ways, "share_pct": share,
        "conflicts": stats.conflicts, "wavefronts": stats.wavefronts or 0.0,
        "requests": stats.requests,
    }
    text = (f"The average shared-memory {direction} takes {ways:.1f} wavefronts (a {ways:.1f}-way "
            f"access); {fmt(stats.conflicts)} bank conflicts are {fmt(share, 2)}% of the "
            f"{fmt(stats.wavefronts or 0.0)} {direction} wavefronts ({SECTION}).")
    if share >= BAD_SHARE:
        return [
            Finding(
                rule=NAME,
                kind="bad",
                title=f"Shared-memory {direction}s hit bank conflicts: a {ways:.1f}-way "
                f"access on average, {fmt(share)}% of {direction} wavefronts are conflicts.",
                text=text,
                section=SECTION,
                fix_title=f"Eliminate bank conflicts on shared {direction}s.",
                fix_text=f"Threads of a warp that touch the same bank serialize, so each "
                f"conflicting {direction} costs extra wavefronts. Padding each tile row by one "
                "element, or a swizzled index, spreads a warp's addresses over all 32 banks.",
                what_if="What if the shared tiles were padded or swizzled so that the "
                f"{direction}s of one warp fall into 32 different banks?",
                weight=share,
                metrics=metrics,
            )
        ]
    if share < CLEAN_SHARE:
        return [
            Finding(
                rule=NAME,
                kind="good",
                title=f"Shared-memory {direction}s are free of bank conflicts "
                f"({fmt(share, 2)}% of wavefronts).",
                text=text,
                section=SECTION,
                metrics=metrics,
            )
        ]
    return [Finding(rule=NAME, kind="info", title=f"Shared-memory {direction}s see few bank "
                    f"conflicts ({fmt(share, 2)}% of wavefronts).", text=text,
                    section=SECTION, weight=share, metrics=metrics)]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    conflicts = profile.bank_conflicts
    return _one("load", conflicts.loads) + _one("store", conflicts.stores)
