"""Shared-memory bank conflicts, loads and stores apart (Memory Workload Analysis).

As in ncu's SharedMemoryConflicts rule: the N-way figure is wavefronts per shared request,
and the cost is the share of all shared wavefronts that are bank conflicts. ncu counts as
conflicts the wavefronts beyond the fewest the accesses need, so the fewest per instruction
is (wavefronts - conflicts) / instructions: 1 for 32-bit accesses, 4 for 128-bit ones. Where
it is above one, wavefronts per instruction are said beside that least, not as an N-way
conflict. ncu's request count is of plain shared instructions (LDS, STS) while its
wavefronts also hold those of the matrix instructions (LDSM, STSM: several 8x8 matrices
each, several wavefronts by design) and of other writers of shared memory; where those ran,
or the figure exceeds the 32 wavefronts a warp's access can take, it is quoted with that
reason and not read as conflicts.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.findings import evidence, shape
from harness.findings.evidence import Evidence, Op, ev
from harness.findings.model import Finding, fmt
from harness.report import BankConflictStats, KernelReport

NAME = "bank_conflicts"
SECTION = "Memory Workload Analysis"
BAD_SHARE = 5.0  # percent of wavefronts that are conflicts before we call it a problem
CLEAN_SHARE = 1.0  # below this the accesses count as conflict-free
MAX_WAYS = 32.0  # wavefronts one warp-wide access can take at most (every lane its own bank row)
MATRIX = {"load": "LDSM", "store": "STSM"}
WIDE = 1.5  # fewest wavefronts per instruction from which accesses count as wide (64-bit: 2)


def _ways(direction: str) -> Callable[[KernelReport], float | None]:
    return lambda p: getattr(p.bank_conflicts, f"{direction}s").ways


for _direction in ("load", "store"):
    evidence.MEASURES[f"shared_{_direction}_ways"] = (
        f"shared-memory wavefronts per {_direction} instruction (ncu's N-way)",
        _ways(_direction))


def unreadable(profile: KernelReport, direction: str) -> Finding | None:
    """The aside that quotes ncu's N-way figure with why it cannot be read as bank conflicts,
    where it cannot; None where it can."""
    stats = getattr(profile.bank_conflicts, f"{direction}s")
    ways = stats.ways
    matrix = next((o.executed for o in profile.instruction_mix
                   if o.opcode == MATRIX[direction] and o.executed), None)
    if ways is None or (matrix is None and ways <= MAX_WAYS):
        return None
    op = {"load": "ld", "store": "st"}[direction]
    plain = (f"the {fmt(stats.requests or 0.0, 0)} shared {direction} instructions it divides "
             f"by (smsp__sass_inst_executed_op_shared_{op})")
    if matrix is not None:
        why = (f"the wavefronts include those of {fmt(matrix, 0)} {MATRIX[direction]} (matrix "
               f"{direction}s of several 8x8 matrices each, several wavefronts by design), "
               f"which {plain} leave out")
        because = ev(profile, f"opcode:{MATRIX[direction]}", ">", 0.0)
    else:
        why = (f"no access of a 32-lane warp takes more than {MAX_WAYS:.0f} wavefronts, so the "
               f"wavefronts include writers of shared memory that {plain} leave out")
        because = ev(profile, f"shared_{direction}_ways", ">", MAX_WAYS)
    return Finding(
        rule=NAME, kind="info",
        title=f"ncu's {fmt(ways)}-way figure for shared-memory {direction}s is not read as bank "
        f"conflicts: {why}.",
        text=f"{fmt(stats.wavefronts or 0.0, 0)} {direction} wavefronts, "
        f"{fmt(stats.conflicts or 0.0, 0)} of them counted as bank conflicts, over "
        f"{fmt(stats.requests or 0.0, 0)} instructions ({SECTION}).",
        section=SECTION, metrics={"direction": direction, "ways": ways, "odd_figure": "ways"},
        evidence=(because,))


def fewest_wavefronts(stats: BankConflictStats) -> float | None:
    """The fewest wavefronts per instruction the accesses need: those ncu does not count as
    conflicts, per instruction."""
    if not stats.requests or stats.wavefronts is None or stats.conflicts is None:
        return None
    return max(stats.wavefronts - stats.conflicts, 0.0) / stats.requests


def _one(direction: str, stats: BankConflictStats, staged: str = "tile") -> list[Finding]:
    ways, share = stats.ways, stats.conflict_share_pct
    if not stats.requests or ways is None or share is None or stats.conflicts is None:
        return []  # no shared accesses of this direction, or not collected
    metrics: dict[str, float | str] = {
        "direction": direction, "ways": ways, "share_pct": share,
        "conflicts": stats.conflicts, "wavefronts": stats.wavefronts or 0.0,
        "requests": stats.requests,
    }
    least = fewest_wavefronts(stats)
    if least is not None and least >= WIDE:  # wide accesses: several wavefronts by design
        metrics["fewest"] = least
        taken = (f"{ways:.2f} wavefronts, of which its accesses need {least:.2f} at best "
                 f"(ncu's {ways:.1f}-way figure is wavefronts per instruction, conflicts or not)")
        headline = f"{ways:.2f} wavefronts per {direction} where {least:.2f} would do"
    else:
        taken = f"{ways:.1f} wavefronts (a {ways:.1f}-way access)"
        headline = f"a {ways:.1f}-way access on average"
    text = (f"The average shared-memory {direction} takes {taken}; {fmt(stats.conflicts)} bank "
            f"conflicts are {fmt(share, 2)}% of the {fmt(stats.wavefronts or 0.0)} {direction} "
            f"wavefronts ({SECTION}).")
    def measure(op: Op, threshold: float) -> Evidence:
        return Evidence(f"shared_{direction}_conflict_pct", op, threshold, share)

    if share >= BAD_SHARE:
        return [
            Finding(
                rule=NAME,
                kind="bad",
                title=f"Shared-memory {direction}s hit bank conflicts: {headline}, "
                f"{fmt(share)}% of {direction} wavefronts are conflicts.",
                text=text,
                section=SECTION,
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
    found: list[Finding] = []
    for direction, stats in (("load", conflicts.loads), ("store", conflicts.stores)):
        odd = unreadable(profile, direction)
        found += [odd] if odd is not None else _one(direction, stats, staged)
    return found
