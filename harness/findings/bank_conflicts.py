"""Shared-memory bank conflicts, loads and stores apart (Memory Workload Analysis).

As in ncu's SharedMemoryConflicts rule: the N-way figure is wavefronts per shared request,
and the cost is the share of all shared wavefronts that are bank conflicts.
"""

from __future__ import annotations

from harness.findings import shape
from harness.findings.evidence import Evidence, Op
from harness.findings.model import Finding, fmt
from harness.report import BankConflictStats, KernelReport

NAME = "bank_conflicts"
SECTION = "Memory Workload Analysis"
BAD_SHARE = 5.0  # percent of wavefronts that are conflicts before we call it a problem
CLEAN_SHARE = 1.0  # below this the accesses count as conflict-free


def _one(direction: str, stats: BankConflictStats, staged: str = "tile") -> list[Finding]:
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
    def measure(op: Op, threshold: float) -> Evidence:
        return Evidence(f"shared_{direction}_conflict_pct", op, threshold, share)

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
                f"conflicting {direction} costs extra wavefronts. Padding each {staged} row by one "
                "element, or a swizzled index, spreads a warp's addresses over all 32 banks.",
                what_if=f"What if the shared {staged}s were padded or swizzled so that the "
                f"{direction}s of one warp fall into 32 different banks?",
                weight=share,
                metrics=metrics,
                evidence=(Evidence(f"shared_{direction}_conflict_pct", ">=", BAD_SHARE, share),),
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
                evidence=(Evidence(f"shared_{direction}_conflict_pct", "<", CLEAN_SHARE, share),),
            )
        ]
    return [Finding(rule=NAME, kind="info", title=f"Shared-memory {direction}s see few bank "
                    f"conflicts ({fmt(share, 2)}% of wavefronts).", text=text,
                    section=SECTION, weight=share, metrics=metrics,
                    evidence=(measure(">=", CLEAN_SHARE), measure("<", BAD_SHARE)))]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    conflicts = profile.bank_conflicts
    # a kernel that does not tile stages data in shared arrays, not tiles (`shape.tiles`)
    staged = "tile" if shape.tiles(profile) else "array"
    return _one("load", conflicts.loads, staged) + _one("store", conflicts.stores, staged)
