"""Scalar against vectorized memory instructions, from the executed SASS opcodes' widths.

`sass__inst_executed_per_opcode_with_modifier_all` counts e.g. LDG.E (32 bit) apart from
LDG.E.128; a kernel that moves floats one at a time issues up to four times the instructions.
"""

from __future__ import annotations

from harness.findings.evidence import ev, share_of_whole
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "vectorization"
SECTION = "Instruction Statistics (SASS)"
SCALAR_SHARE = 10.0  # at most this share of wide instructions counts as "not vectorized"
GOOD_SHARE = 50.0
# A space and direction is worth a finding only when it is at least this share of all executed
# warp instructions: a store executed once per block, or a few loads beside a long loop of
# math, cost nothing that wider accesses would save.
MIN_INSTRUCTION_SHARE = 1.0
# Shared memory used as a staging buffer that each word passes through once (loads about as
# many as stores, as in a tree of partial sums or a transpose) gains nothing from wider accesses:
# each thread handles one word per step. Wide accesses pay when a block re-reads what it
# staged (tiles): at least this many shared loads per shared store.
SHARED_REUSE = 3.0

_PAIRS = (("global", "load"), ("global", "store"), ("shared", "load"), ("shared", "store"))
_OPCODE = {("global", "load"): "LDG", ("global", "store"): "STG",
           ("shared", "load"): "LDS", ("shared", "store"): "STS"}


def shares(profile: KernelReport) -> dict[tuple[str, str], tuple[float, float]]:
    """(space, kind) -> (vectorized share in percent, executed instructions), where executed."""
    widths = profile.memory_widths
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for space, kind in _PAIRS:
        share = widths.vectorized_share_pct(space, kind)  # type: ignore[arg-type]
        if share is not None:
            out[(space, kind)] = (share, widths.executed(space, kind))  # type: ignore[arg-type]
    return out


def worth_widening(profile: KernelReport, space: str, kind: str, executed: float) -> bool:
    """Whether scalar accesses of this space and direction carry enough of the kernel's
    instructions for wider ones to matter (see MIN_INSTRUCTION_SHARE and SHARED_REUSE)."""
    total = profile.executed_instructions
    if total and 100.0 * executed / total < MIN_INSTRUCTION_SHARE:
        return False
    if space == "shared":
        widths = profile.memory_widths
        loads, stores = widths.executed("shared", "load"), widths.executed("shared", "store")
        if loads < SHARED_REUSE * stores:
            return False
    return True


def scalar_global_loads(finding: Finding) -> bool:
    """Whether a finding of this rule flags scalar global loads (a cause of long-scoreboard
    waits in a kernel that streams from memory: few bytes in flight per load)."""
    return finding.rule == NAME and finding.kind == "bad" and bool(
        finding.metrics.get("scalar_global_loads"))


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    found = shares(profile)
    if not found:
        return []
    scalar_all = {key: v for key, v in found.items() if v[0] <= SCALAR_SHARE}
    scalar = {key: v for key, v in scalar_all.items()
              if worth_widening(profile, key[0], key[1], v[1])}
    minor = {key: v for key, v in scalar_all.items() if key not in scalar}
    wide = {key: v for key, v in found.items() if v[0] >= GOOD_SHARE}
    findings: list[Finding] = []
    if scalar:
        parts = [f"{_OPCODE[key]} {fmt(share)}% of {fmt(n)}" for key, (share, n) in scalar.items()]
        names = ", ".join(f"{space} {kind}s" for space, kind in scalar)
        total = sum(n for _, n in scalar.values())
        # the parts and their whole from one counter family (SASS opcodes executed): a share
        # of a whole never exceeds 100%, so counters that disagree leave it unstated
        whole = sum(o.executed for o in profile.instruction_mix) or profile.executed_instructions
        of_whole = share_of_whole(total, whole)
        share = (f"{fmt(of_whole)}% of executed instructions" if of_whole is not None
                 else "their share of executed instructions not judged: the counters disagree")
        also = [f"{_OPCODE[key]} {fmt(v[0])}% of {fmt(v[1])}" for key, v in minor.items()]
        aside = (f"; too few to matter: {'; '.join(also)}" if also else "")
        metrics: dict[str, float | str] = {f"{s}_{k}_vector_pct": v[0]
                                           for (s, k), v in found.items()}
        if ("global", "load") in scalar:
            metrics["scalar_global_loads"] = 1.0
        findings.append(
            Finding(
                rule=NAME,
                kind="bad",
                title=f"Memory instructions are not vectorized: {names} are (almost) all "
                f"32-bit ({share}).",
                text=f"Share of executed memory instructions wider than 32 bits: "
                f"{'; '.join(parts)}{aside} ({SECTION}).",
                section=SECTION,
                weight=min(50.0, of_whole if of_whole is not None else 0.0),
                metrics=metrics,
                evidence=tuple(ev(profile, f"vector:{s}_{k}", "<=", SCALAR_SHARE)
                               for s, k in scalar),
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
                evidence=tuple(ev(profile, f"vector:{s}_{k}", ">=", GOOD_SHARE) for s, k in wide),
            )
        )
    return findings
