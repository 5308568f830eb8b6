"""Scalar against vectorized memory instructions, from the executed SASS opcodes' widths.

`sass__inst_executed_per_opcode_with_modifier_all` counts e.g. LDG.E (32 bit) apart from
LDG.E.128; a kernel that moves floats one at a time issues up to four times the instructions.
"""

from __future__ import annotations

from harness.findings.model import Finding, fmt
from harness.report.kernel_profile import KernelProfile

NAME = "vectorization"
SECTION = "Instruction Statistics (SASS)"
SCALAR_SHARE = 10.0  # at most this share of wide instructions counts as "not vectorized"
GOOD_SHARE = 50.0

_PAIRS = (("global", "load"), ("global", "store"), ("shared", "load"), ("shared", "store"))
_OPCODE = {("global", "load"): "LDG", ("global", "store"): "STG",
           ("shared", "load"): "LDS", ("shared", "store"): "STS"}


def shares(profile: KernelProfile) -> dict[tuple[str, str], tuple[float, float]]:
    """(space, kind) -> (vectorized share in percent, executed instructions), where executed."""
    widths = profile.memory_widths
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for space, kind in _PAIRS:
        share = widths.vectorized_share_pct(space, kind)  # type: ignore[arg-type]
        if share is not None:
            out[(space, kind)] = (share, widths.executed(space, kind))  # type: ignore[arg-type]
    return out


def check(profile: KernelProfile, previous: KernelProfile | None = None) -> list[Finding]:
    found = shares(profile)
    if not found:
        return []
    scalar = {key: v for key, v in found.items() if v[0] <= SCALAR_SHARE}
    wide = {key: v for key, v in found.items() if v[0] >= GOOD_SHARE}
    findings: list[Finding] = []
    if scalar:
        parts = [f"{_OPCODE[key]} {fmt(share)}% of {fmt(n)}" for key, (share, n) in scalar.items()]
        names = ", ".join(f"{space} {kind}s" for space, kind in scalar)
        total = sum(n for _, n in scalar.values())
        findings.append(
            Finding(
                rule=NAME,
                kind="bad",
                title=f"Memory instructions are not vectorized: {names} are (almost) all 32-bit.",
                text=f"Share of executed memory instructions wider than 32 bits: "
                f"{'; '.join(parts)} ({SECTION}).",
                section=SECTION,
                fix_title="Use fewer but wider memory loads.",
                fix_text="Each 32-bit load or store is one instruction for four bytes; a "
                "128-bit (float4) access moves four times as much per instruction and takes "
                "pressure off the LSU and MIO queues.",
                what_if="What if memory were read and written as float4 (128-bit) vectors, "
                "with 16-byte aligned tiles?",
                weight=min(50.0, 100.0 * total / max(1.0, profile.executed_instructions or total)),
                metrics={f"{s}_{k}_vector_pct": v[0] for (s, k), v in found.items()},
            )
        )
    if wide:
        parts = [f"{_OPCODE[key]} {fmt(share)}%" for key, (share, _n) in wide.items()]
        findings.append(
            Finding(
                rule=NAME,
                kind="good",
                title="Memory instructions are vectorized "
                f"({', '.join(parts)} wider than 32 bits).",
                text=f"Share of executed memory instructions wider than 32 bits: "
                f"{', '.join(parts)} ({SECTION}).",
                section=SECTION,
                metrics={f"{s}_{k}_vector_pct": v[0] for (s, k), v in found.items()},
            )
        )
    return findings
