"""Atomics: how many, in which space, and whether same-address atomics serialize in L2
(Memory Workload Analysis).

Global atomics (ATOM, RED) execute in the L2 slice that owns the address. Spread over many
addresses they use every slice; aimed at one address they queue in one slice, whose atomic
unit then runs far busier than the average slice
(`lts__d_atomic_input_cycles_active.{max,avg}`): the updates serialize.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "atomics"
SECTION = "Memory Workload Analysis"
HOT_SLICE_PCT = 30.0  # the busiest L2 slice's atomic unit at least this busy ...
CONCENTRATION = 8.0  # ... and this many times busier than the average slice: one address
ATOMIC_OPCODES = ("ATOM", "ATOMG", "RED", "REDG", "ATOMS", "REDUX")
SHARED_OPCODES = ("ATOMS",)
DOMINANT = 10.0  # percent of executed instructions: the atomics are the kernel's main work
SCATTERED = 4.0  # sectors per warp-level global atomic: lanes aim at different addresses


def executed_atomics(profile: KernelReport) -> dict[str, float]:
    """Executed warp-level atomic instructions by opcode (ATOMS: shared memory)."""
    return {o.opcode: o.executed for o in profile.instruction_mix
            if o.opcode in ATOMIC_OPCODES and o.executed}


def serializes(profile: KernelReport) -> bool:
    """Whether the atomics pile up in one L2 slice (same-address contention)."""
    at = profile.atomics
    hot, avg = at.l2_atomic_unit_max_pct, at.l2_atomic_unit_avg_pct
    if hot is None or avg is None or hot < HOT_SLICE_PCT:
        return False
    return avg == 0 or hot >= CONCENTRATION * avg


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    executed = executed_atomics(profile)
    at = profile.atomics
    if not executed and not at.global_requests and not at.shared_atom_instructions:
        return []
    counts = ", ".join(f"{op} {fmt(n, 0)}" for op, n in sorted(executed.items()))
    parts = [f"executed atomic instructions: {counts or 'none counted'}"]
    if at.global_atom_requests is not None or at.global_red_requests is not None:
        parts.append(f"global ATOM requests {fmt(at.global_atom_requests or 0.0, 0)}, RED "
                     f"{fmt(at.global_red_requests or 0.0, 0)}")
    if at.l2_atomic_unit_max_pct is not None and at.l2_atomic_unit_avg_pct is not None:
        parts.append(f"L2 atomic units busy {fmt(at.l2_atomic_unit_avg_pct)}% on average, "
                     f"{fmt(at.l2_atomic_unit_max_pct)}% in the busiest slice")
    text = "; ".join(parts) + f" ({SECTION})."
    metrics: dict[str, float | str] = {
        "atomic_instructions": sum(executed.values()),
        "l2_atomic_max_pct": at.l2_atomic_unit_max_pct or 0.0,
        "l2_atomic_avg_pct": at.l2_atomic_unit_avg_pct or 0.0,
    }
    if serializes(profile):
        return [Finding(
            rule=NAME, kind="bad",
            title=f"Same-address atomics serialize in one L2 slice: its atomic unit is busy "
            f"{fmt(at.l2_atomic_unit_max_pct or 0.0)}% of the time, the average slice "
            f"{fmt(at.l2_atomic_unit_avg_pct or 0.0)}%.",
            text=text, section=SECTION,
            # the share of the L2's atomic capacity left idle by aiming at one slice
            weight=100.0 * (1.0 - (at.l2_atomic_unit_avg_pct or 0.0)
                            / (at.l2_atomic_unit_max_pct or 1.0)),
            metrics=metrics,
            evidence=(ev(profile, "l2_atomic_busiest_pct", ">=", HOT_SLICE_PCT),
                      ev(profile, "l2_atomic_concentration", ">=", CONCENTRATION)),
        )]
    dominant = _dominant(profile, executed, text, metrics)
    if dominant is not None:
        return [dominant]
    return [Finding(rule=NAME, kind="info", title=f"The kernel executes atomics ({counts}).",
                    text=text, section=SECTION, metrics=metrics,
                    evidence=(ev(profile, "atomic_executed", ">", 0.0),))]


def _dominant(profile: KernelReport, executed: dict[str, float], text: str,
              metrics: dict[str, float | str]) -> Finding | None:
    """Atomics that make up much of the kernel, named by space and spread: shared-memory
    atomics, or global atomics whose lanes hit different sectors (scattered)."""
    total = profile.executed_instructions
    if not total:
        return None
    shared = sum(n for op, n in executed.items() if op in SHARED_OPCODES)
    glob = sum(n for op, n in executed.items() if op not in SHARED_OPCODES and op != "REDUX")
    if 100.0 * shared / total >= DOMINANT and shared >= glob:
        share = 100.0 * shared / total
        wavefronts = profile.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum")
        per = (f"; {fmt(wavefronts / shared, 2)} shared-memory wavefronts per instruction"
               if wavefronts else "")
        return Finding(
            rule=NAME, kind="bad",
            title=f"Shared-memory atomics dominate: ATOMS is {fmt(share)}% of executed "
            f"instructions ({fmt(shared, 0)}){per}.",
            text=text, section=SECTION,
            weight=share, metrics={**metrics, "space": "shared", "share_pct": share},
            evidence=(ev(profile, "shared_atomic_share_pct", ">=", DOMINANT),),
        )
    share = 100.0 * glob / total
    at = profile.atomics
    sectors = profile.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum") or 0.0
    sectors += profile.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum") or 0.0
    requests = at.global_requests
    if share < DOMINANT or not requests or sectors / requests < SCATTERED:
        return None
    l2 = profile.speed_of_light.l2_throughput_pct
    busy = f", keeping L2 at {fmt(l2)}% of its peak" if l2 is not None else ""
    return Finding(
        rule=NAME, kind="bad",
        title=f"Scattered global atomics dominate: {fmt(share)}% of executed instructions, "
        f"each warp's atomic touching {fmt(sectors / requests)} sectors{busy}.",
        text=text, section=SECTION,
        weight=share + (l2 or 0.0) / 2,
        metrics={**metrics, "space": "global", "share_pct": share,
                 "sectors_per_request": sectors / requests},
        evidence=(ev(profile, "global_atomic_share_pct", ">=", DOMINANT),
                  ev(profile, "global_atomic_sectors_per_request", ">=", SCATTERED)),
    )
