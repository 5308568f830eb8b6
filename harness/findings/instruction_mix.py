"""What the executed instructions are: the share of math against its overhead (Instruction
Statistics).

The classes come from `sass__inst_executed_per_opcode` (see
`harness.report.instruction_classes`). A kernel whose MMAs (HMMA, HGMMA, QGMMA, IMMA, DMMA) do
work has its math on the tensor cores, whatever share of the instructions they are: one MMA
does the work of hundreds of FMAs, so its operations, by precision (`report.math_rates`), are
what the finding counts. Otherwise, when the main math class (FP32, FP64, FP16 or
transcendentals) is a minority of the executed instructions, the rest (address arithmetic,
loads and stores, control) is what the SM spends its issue slots on.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import MATH_CLASSES, KernelReport, math_rates

NAME = "instruction_mix"
SECTION = "Instruction Statistics"
MATH_SHARE = 50.0  # percent of executed instructions: below this, overhead dominates
OTHERS_NAMED = 2


def _tensor_math(profile: KernelReport) -> Finding | None:
    """The tensor cores' share of the kernel's operations, by precision."""
    rates = math_rates(profile)
    tensor = [r for r in rates if r.unit == "tensor"]
    total = sum(r.ops for r in rates)
    if not tensor or not total:
        return None
    ops = sum(r.ops for r in tensor)
    mma = profile.instruction_class("tensor")
    share = f"{fmt(mma.share_pct)}%" if mma is not None else "a small share"
    how = "ncu's counts" if tensor[0].counted_by == "ncu" else "the MMA shapes executed"
    return Finding(
        rule=NAME, kind="info",
        title=f"The tensor cores do the math: {fmt(100.0 * ops / total)}% of the kernel's "
        f"operations are {'/'.join(r.precision for r in tensor)} MMAs, "
        f"{', '.join(r.words for r in tensor)}.",
        text=f"The MMA instructions are {share} of those executed, each doing the work of "
        f"hundreds of FMAs; operations by precision from {how}: "
        + "; ".join(r.words for r in rates) + f" ({SECTION}).",
        section=SECTION,
        metrics={"math_class": "tensor", "tensor_ops_pct": 100.0 * ops / total},
        evidence=(ev(profile, "mma_executed", ">", 0.0),),
    )


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    tensor = _tensor_math(profile)
    if tensor is not None:
        return [tensor]
    classes = profile.instruction_classes
    math = [c for c in classes if c.name in MATH_CLASSES]
    if not math:
        return []
    main = math[0]
    others = [c for c in classes if c is not main][:OTHERS_NAMED]
    opcode = main.opcodes[0] if main.opcodes else main.name
    opcode_share = next((o.share_pct for o in profile.instruction_mix if o.opcode == opcode),
                        main.share_pct)
    metrics: dict[str, float | str] = {"math_class": main.name, "math_share_pct": main.share_pct,
                                       "opcode": opcode, "opcode_share_pct": opcode_share}
    # an FP16 class of HFMA2.MMA register moves alone is no half-precision math
    fp16 = (ev(profile, "fp16_executed", ">", 0.0),) if main.name == "FP16" else ()
    rest = " and ".join(f"{c.name} ({fmt(c.share_pct)}%)" for c in others)
    if main.share_pct >= MATH_SHARE:
        return [Finding(
            rule=NAME, kind="info",
            title=f"{main.name} math is {fmt(main.share_pct)}% of executed instructions "
            f"({opcode} {fmt(opcode_share)}%).",
            text=f"The rest: {rest} ({SECTION}).",
            section=SECTION, metrics=metrics,
            evidence=(ev(profile, f"class:{main.name}", ">=", MATH_SHARE), *fp16,
                      ev(profile, "mma_executed", "<=", 0.0)),
        )]
    return [Finding(
        rule=NAME, kind="info",
        title=f"{opcode} is only {fmt(opcode_share)}% of executed instructions: {rest} take "
        "most of the rest.",
        text=f"The main math class, {main.name}, is {fmt(main.share_pct)}% of the executed "
        f"warp instructions; every other instruction is overhead the math pays for "
        f"({SECTION}).",
        section=SECTION, weight=MATH_SHARE - main.share_pct, metrics=metrics,
        evidence=(ev(profile, f"class:{main.name}", "<", MATH_SHARE), *fp16,
                  ev(profile, "mma_executed", "<=", 0.0)),
    )]
