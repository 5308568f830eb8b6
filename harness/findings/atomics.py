"""Atomics: how many, in which space, and whether same-address atomics serialize in L2
(Memory Workload Analysis).

Global atomics (ATOM, RED) execute in the L2 slice that owns the address. Spread over many
addresses they use every slice; aimed at one address they queue in one slice, whose atomic
unit then runs far busier than the average slice
(`lts__d_atomic_input_cycles_active.{max,avg}`): the updates serialize.
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "atomics"
SECTION = "Memory Workload Analysis"
HOT_SLICE_PCT = 30.0  # the busiest L2 slice's atomic unit at least this busy ...
CONCENTRATION = 8.0  # ... and this many times busier than the average slice: one address
ATOMIC_OPCODES = ("ATOM", "ATOMG", "RED", "REDG", "ATOMS", "REDUX")


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
            fix_title="Aggregate before the atomic.",
            fix_text="Every thread's update of the same word waits for the one before it in "
            "the L2 slice that owns the word.",
            what_if="What if each warp (or block) first reduced its values (warp shuffles, "
            "shared memory) and only one lane per warp issued the atomic, or each block "
            "wrote a partial result for a second pass?",
            # the share of the L2's atomic capacity left idle by aiming at one slice
            weight=100.0 * (1.0 - (at.l2_atomic_unit_avg_pct or 0.0)
                            / (at.l2_atomic_unit_max_pct or 1.0)),
            metrics=metrics,
        )]
    return [Finding(rule=NAME, kind="info", title=f"The kernel executes atomics ({counts}).",
                    text=text, section=SECTION, metrics=metrics)]
