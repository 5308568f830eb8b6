"""Shared-memory bank conflicts, loads and stores apart (Memory Workload Analysis).

Where the report holds each instruction's wavefronts (Source Counters, `--set full`), they
decide: an instruction's conflicts are its wavefronts beyond its ideal, and the finding names
the instructions that carry them (cp.async's LDGSTS among the stores, which the l1tex counters
leave out), or says where the l1tex counters count conflicts no instruction's addresses explain.
Otherwise, as ncu's SharedMemoryConflicts rule: the N-way figure is wavefronts per request and
the cost the share of shared wavefronts that are conflicts, beyond the fewest the accesses
need, (wavefronts - conflicts) / instructions: 4 for 128-bit ones, which are said against that
least. Matrix instructions (LDSM, STSM) and other writers of shared memory add wavefronts that
ncu's request count leaves out: where they ran, or the figure exceeds the 32 wavefronts a warp's
access can take, it is quoted with that reason and not read as conflicts.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.findings import evidence
from harness.findings.evidence import Evidence, Op, ev
from harness.findings.model import Finding, fmt
from harness.report import BankConflictStats, KernelReport, SassInstruction

NAME = "bank_conflicts"
SECTION = "Memory Workload Analysis"
BAD_SHARE = 5.0  # percent of wavefronts that are conflicts before we call it a problem
CLEAN_SHARE = 1.0  # below this the accesses count as conflict-free
MAX_WAYS = 32.0  # wavefronts one warp-wide access can take at most (every lane its own bank row)
MATRIX = {"load": "LDSM", "store": "STSM"}
WIDE = 1.5  # fewest wavefronts per instruction from which accesses count as wide (64-bit: 2)
# what each direction's instructions are by their opcode: LDGSTS (cp.async) writes shared memory
OPCODES = {"load": ("LDS", "LDSM", "LD"), "store": ("STS", "STSM", "LDGSTS", "ST")}
NAMED = 3  # instructions a finding names, most excess first


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


def _one(profile: KernelReport, direction: str, stats: BankConflictStats) -> list[Finding]:
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
        why = ("the report has no wavefronts by instruction (Source Counters, `--set full`)"
               if instructions(profile, direction) is None else
               f"no {direction} instruction carries shared wavefronts in the Source Counters")
        text = text.removesuffix(f" ({SECTION}).") + (
            f"; which instructions' addresses conflict is not judged: {why} ({SECTION}).")
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


def _opcode(instruction: SassInstruction) -> str:
    """"LDGSTS" of "@P0 LDGSTS.E.BYPASS.128 [R21], ..."."""
    return instruction.opcode.split(".")[0]


def instructions(profile: KernelReport, direction: str) -> list[SassInstruction] | None:
    """The direction's shared-memory instructions with their wavefronts; None where the
    report holds no wavefronts by instruction."""
    if not any(i.shared_wavefronts is not None for i in profile.sass):
        return None
    return [i for i in profile.sass if i.shared_wavefronts and _opcode(i) in OPCODES[direction]]


def excess_pct(profile: KernelReport, direction: str) -> float | None:
    """Wavefronts beyond each instruction's ideal, as a share of the direction's wavefronts
    by instruction (%); None where not collected or none ran."""
    total, excess = _wavefronts(instructions(profile, direction) or [])
    return 100.0 * excess / total if total else None


def _wavefronts(found: list[SassInstruction]) -> tuple[float, float]:
    """The instructions' shared wavefronts, and those beyond each one's ideal."""
    return (sum(i.shared_wavefronts or 0.0 for i in found),
            sum(i.shared_excess for i in found))


for _direction in ("load", "store"):
    evidence.MEASURES[f"shared_{_direction}_excess_pct"] = (
        f"shared {_direction} wavefronts beyond each instruction's ideal (%, Source Counters)",
        lambda p, d=_direction: excess_pct(p, d))


def _sites(found: list[SassInstruction]) -> list[str]:
    """The instructions with wavefronts beyond their ideal, grouped by instruction text and
    source line, most excess first: "`LDS.128` at register_tiled.cu:34 (16 instructions,
    2.00x their ideal wavefronts)"."""
    groups: dict[tuple[str, str], list[SassInstruction]] = {}
    for i in found:
        if i.shared_excess:
            groups.setdefault((i.opcode, i.source or ""), []).append(i)

    said = []
    for (text, source), group in sorted(groups.items(),
                                        key=lambda kv: -_wavefronts(kv[1])[1]):
        ratio = (sum(i.shared_wavefronts or 0.0 for i in group)
                 / (sum(i.shared_wavefronts_ideal or 0.0 for i in group) or 1.0))
        where = f" at {source}" if source else ""
        count = f"{len(group)} instructions, " if len(group) > 1 else ""
        their = "their" if len(group) > 1 else "its"
        said.append(f"`{text}`{where} ({count}{fmt(ratio, 2)}x {their} ideal wavefronts)")
    return said


def _by_instruction(profile: KernelReport, direction: str, stats: BankConflictStats,
                    aggregate_read: bool) -> list[Finding]:
    """The finding read from each instruction's wavefronts against its ideal. Where
    `aggregate_read`, the l1tex figures are readable, and a conflict share they count that
    no instruction carries is said."""
    found = instructions(profile, direction) or []
    share = excess_pct(profile, direction)
    if share is None:
        return []
    total, excess = _wavefronts(found)
    sites = _sites(found)
    opcodes = ", ".join(sorted({_opcode(i) for i in found}))
    metrics: dict[str, float | str] = {"direction": direction, "share_pct": share,
                                       "conflicts": excess, "wavefronts": total,
                                       "by_instruction": 1.0}
    counted = stats.conflict_share_pct
    text = (f"{fmt(excess, 0)} of the {fmt(total, 0)} wavefronts of the shared {direction}s "
            f"({opcodes}) are beyond what their accesses need, instruction by instruction "
            "(Source Counters)")
    if sites:
        text += ": " + "; ".join(sites[:NAMED])
    unaccounted = (aggregate_read and counted is not None and counted >= BAD_SHARE
                   and share < CLEAN_SHARE)
    if unaccounted:
        took = ("each took the wavefronts its addresses need" if not excess else
                f"they took only {fmt(share, 2)}% beyond what their addresses need")
        text += (f". ncu's l1tex counter counts {fmt(stats.conflicts or 0.0, 0)} {direction} "
                 f"bank conflicts ({fmt(counted)}% of its wavefronts), which no {direction} "
                 f"instruction's addresses account for: {took}, so padding or swizzling them "
                 "would not remove these")
    text += f" ({SECTION})."

    def measure(op: Op, threshold: float) -> Evidence:
        return ev(profile, f"shared_{direction}_excess_pct", op, threshold)

    if share >= BAD_SHARE:
        more = f" and {len(sites) - 1} more" if len(sites) > 1 else ""
        return [Finding(
            rule=NAME, kind="bad",
            title=f"Shared-memory {direction}s hit bank conflicts: {fmt(share)}% of the "
            f"{opcodes} wavefronts, at {sites[0]}{more}.",
            text=text, section=SECTION, weight=share, metrics=metrics,
            evidence=(measure(">=", BAD_SHARE),))]
    if unaccounted:
        return [Finding(
            rule=NAME, kind="info",
            title=f"Shared-memory {direction}s' addresses are free of bank conflicts "
            f"instruction by instruction ({opcodes}), but the l1tex counter counts "
            f"{fmt(counted or 0.0)}% of the {direction} wavefronts as conflicts.",
            text=text, section=SECTION, weight=counted or 0.0, metrics=metrics,
            evidence=(measure("<", CLEAN_SHARE), Evidence(
                f"shared_{direction}_conflict_pct", ">=", BAD_SHARE, counted)))]
    if share < CLEAN_SHARE:
        return [Finding(
            rule=NAME, kind="good",
            title=f"Shared-memory {direction}s are free of bank conflicts instruction by "
            f"instruction ({fmt(share, 2)}% of the {opcodes} wavefronts beyond their ideal).",
            text=text, section=SECTION, metrics=metrics, evidence=(measure("<", CLEAN_SHARE),))]
    return [Finding(rule=NAME, kind="info", title=f"Shared-memory {direction}s see few bank "
                    f"conflicts ({fmt(share, 2)}% of the {opcodes} wavefronts beyond their "
                    "ideal).",
                    text=text, section=SECTION, weight=share, metrics=metrics,
                    evidence=(measure(">=", CLEAN_SHARE), measure("<", BAD_SHARE)))]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    conflicts = profile.bank_conflicts
    found: list[Finding] = []
    for direction, stats in (("load", conflicts.loads), ("store", conflicts.stores)):
        odd = unreadable(profile, direction)
        if excess_pct(profile, direction) is not None:  # each instruction's wavefronts
            found += _by_instruction(profile, direction, stats, aggregate_read=odd is None)
            found += [odd] if odd is not None else []
            continue
        found += [odd] if odd is not None else _one(profile, direction, stats)
    return found
