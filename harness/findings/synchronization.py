"""Synchronization named when it dominates: block barriers (BAR), cluster barriers
(barrier.cluster: UCGABAR_ARV / UCGABAR_WAIT) with the memory fences that come with them
(MEMBAR), and polling loops (warps spinning on volatile loads, with the YIELD the compiler puts
in such a loop) (Instruction Statistics, Warp State Statistics).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.findings import evidence
from harness.findings.evidence import Evidence, ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "synchronization"
SECTION = "Warp State Statistics"
DOMINANT = 10.0  # percent of executed instructions
WAITING = 25.0  # percent of the cycles between two instructions spent at a barrier or fence
MIN_SHARE = 1.0  # percent of executed instructions: below this the barrier is not what waits
WITH_MODIFIERS = "sass__inst_executed_per_opcode_with_modifier_all"
STRONG_LOADS = ("LDG.E.STRONG", "LD.E.STRONG")  # volatile / relaxed-or-stronger loads


@dataclass(frozen=True)
class Kind:
    words: str  # "Block barriers"
    opcodes: tuple[str, ...]  # the opcodes counted
    stalls: tuple[str, ...]  # the stall reasons they cause


KINDS = (
    Kind("Block barriers", ("BAR",), ("barrier",)),
    Kind("Cluster barriers", ("UCGABAR_ARV", "UCGABAR_WAIT", "MEMBAR"), ("barrier", "membar")),
)


def _opcodes(profile: KernelReport) -> dict[str, tuple[float, float]]:
    return {o.opcode: (o.executed, o.share_pct) for o in profile.instruction_mix if o.executed}


def _stall_share(profile: KernelReport, reasons: tuple[str, ...]) -> tuple[float, float]:
    """Cycles per issued instruction at the given stall reasons, and their percent."""
    total = profile.warp_state.cycles_per_issued_instruction
    cycles = sum(profile.warp_state.stall(r) or 0.0 for r in reasons)
    return cycles, (100.0 * cycles / total if total else 0.0)


def strong_loads(profile: KernelReport) -> float:
    """Executed volatile (strong) loads, from the opcodes with their modifiers."""
    metric = profile.metrics.get(WITH_MODIFIERS)
    if metric is None:
        return 0.0
    return sum(n for op, n in metric.instances if op.startswith(STRONG_LOADS))


def strong_load_share(profile: KernelReport) -> float | None:
    """Volatile loads against executed warp instructions, in percent."""
    total = profile.executed_instructions
    return 100.0 * strong_loads(profile) / total if total else None


evidence.MEASURES["strong_load_share_pct"] = (
    "volatile (strong) global loads (% of executed instructions)", strong_load_share)


def _barrier_evidence(profile: KernelReport, kind: Kind, present: tuple[str, ...],
                      share: float) -> tuple[Evidence, ...]:
    """A barrier dominates by its share of the instructions, or by the waits at it when it
    is more than a trace of them."""
    of = ev(profile, "share:" + "+".join(present), ">=", DOMINANT)
    if share >= DOMINANT:
        return (of,)
    return (ev(profile, "stall:" + "+".join(kind.stalls), ">=", WAITING),
            ev(profile, "share:" + "+".join(present), ">=", MIN_SHARE))


def _barrier_findings(profile: KernelReport, ops: dict[str, tuple[float, float]]) -> list[Finding]:
    found = []
    for kind in KINDS:
        present = {op: ops[op] for op in kind.opcodes if op in ops}
        if not any(op in present for op in kind.opcodes[:2]):
            continue  # a fence alone is no barrier
        share = sum(s for _, s in present.values())
        cycles, waiting = _stall_share(profile, kind.stalls)
        if share < DOMINANT and (waiting < WAITING or share < MIN_SHARE):
            continue
        counts = ", ".join(f"{op} {fmt(n, 0)} ({fmt(s)}%)" for op, (n, s) in present.items())
        per = profile.warp_state.cycles_per_issued_instruction or 0.0
        found.append(Finding(
            rule=NAME, kind="bad",
            title=f"{kind.words} dominate: {'/'.join(present)} "
            f"{'are' if len(present) > 1 else 'is'} {fmt(share)}% of executed "
            f"instructions, and warps wait at them {fmt(cycles)} of every {fmt(per)} cycles "
            f"({fmt(waiting)}%).",
            text=f"Executed {counts}; stalls on {', '.join(kind.stalls)}: {fmt(cycles)} cycles "
            f"per issued instruction ({SECTION}).",
            section=SECTION, weight=max(share, waiting),
            metrics={"kind": kind.words, "share_pct": share, "waiting_pct": waiting},
            evidence=_barrier_evidence(profile, kind, tuple(present), share),
        ))
    return found


def _polling_finding(profile: KernelReport, ops: dict[str, tuple[float, float]]) -> list[Finding]:
    total = profile.executed_instructions
    loads = strong_loads(profile)
    if not total or not loads or "YIELD" not in ops:
        return []  # YIELD marks a loop the compiler could not bound: a spin
    share = 100.0 * loads / total
    if share < DOMINANT:
        return []
    cycles, waiting = _stall_share(profile, ("long_scoreboard",))
    return [Finding(
        rule=NAME, kind="bad",
        title=f"A polling loop dominates: warps spin on volatile loads (LDG.E.STRONG, "
        f"{fmt(share)}% of executed instructions) until a flag changes.",
        text=f"Executed {fmt(loads, 0)} strong (volatile) global loads and YIELD "
        f"{fmt(ops['YIELD'][0], 0)} ({fmt(ops['YIELD'][1])}%) of {fmt(total, 0)} instructions; "
        f"each waits on the memory system ({fmt(cycles)} long-scoreboard cycles per issued "
        f"instruction, {fmt(waiting)}%) ({SECTION}).",
        section=SECTION,
        weight=max(share, waiting),
        metrics={"kind": "polling", "share_pct": share, "waiting_pct": waiting},
        evidence=(ev(profile, "strong_load_share_pct", ">=", DOMINANT),
                  ev(profile, "opcode:YIELD", ">", 0.0)),
    )]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    ops = _opcodes(profile)
    return _barrier_findings(profile, ops) + _polling_finding(profile, ops)
