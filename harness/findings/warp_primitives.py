"""Warp-level primitives: shuffles (SHFL) and votes (VOTE, MATCH) named when they dominate the
executed instructions (Instruction Statistics).

A shuffle moves a register between lanes through the LSU/MIO path and a vote through the ALU;
a kernel made mostly of them is busy exchanging data within warps, not computing.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "warp_primitives"
SECTION = "Instruction Statistics"
DOMINANT = 15.0  # percent of executed warp instructions

# opcode family -> words, the pipe it issues to (ncu's pipe stem)
KINDS = {
    "SHFL": ("Warp shuffles", "lsu"),
    "VOTE": ("Warp votes", "alu"),
    "MATCH": ("Warp match instructions", "alu"),
}


def shares(profile: KernelReport) -> dict[str, tuple[float, float]]:
    """Opcode family -> (executed warp instructions, percent of all executed)."""
    found: dict[str, tuple[float, float]] = {}
    for o in profile.instruction_mix:
        if o.opcode in KINDS and o.executed:
            found[o.opcode] = (o.executed, o.share_pct)
    return found


def dominant(profile: KernelReport) -> tuple[str, float, float] | None:
    """The primitive with the largest share when it is at least `DOMINANT` percent."""
    found = shares(profile)
    if not found:
        return None
    opcode = max(found, key=lambda op: found[op][1])
    executed, share = found[opcode]
    return (opcode, executed, share) if share >= DOMINANT else None


def pipe_of(opcode: str) -> str:
    return KINDS[opcode][1]


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    found = shares(profile)
    if not found:
        return []
    counts = ", ".join(f"{op} {fmt(n, 0)} ({fmt(s)}%)" for op, (n, s) in found.items())
    total = fmt(profile.executed_instructions or 0, 0)
    text = f"Executed warp-level primitives: {counts} of {total} instructions ({SECTION})."
    top = dominant(profile)
    if top is None:  # a few shuffles in a last summing step say nothing about the kernel
        return []
    opcode, executed, share = top
    words, pipe = KINDS[opcode]
    pipe_pct = profile.pipe(pipe)
    on_pipe = (f", and they keep the {pipe.upper()} pipe at {fmt(pipe_pct)}% of its peak"
               if pipe_pct is not None else "")
    return [Finding(
        rule=NAME, kind="bad",
        title=f"{words} dominate: {opcode} is {fmt(share)}% of executed instructions "
        f"({fmt(executed, 0)}){on_pipe}.",
        text=text, section=SECTION,
        weight=max(share, pipe_pct or 0.0),
        metrics={"opcode": opcode, "share_pct": share, "executed": executed,
                 "pipe": pipe, **({"pipe_pct": pipe_pct} if pipe_pct is not None else {})},
        evidence=(ev(profile, f"share:{opcode}", ">=", DOMINANT),),
    )]
