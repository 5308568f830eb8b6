"""What the executed instructions are: the share of math against its overhead (Instruction
Statistics).

The classes come from `sass__inst_executed_per_opcode` (see
`harness.report.instruction_classes`). When the main math class (FP32, FP64, FP16, tensor or
transcendentals) is a minority of the executed instructions, the rest — address arithmetic,
loads and stores, control — is what the SM spends its issue slots on.
"""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import MATH_CLASSES, KernelReport

NAME = "instruction_mix"
SECTION = "Instruction Statistics"
MATH_SHARE = 50.0  # percent of executed instructions: below this, overhead dominates
OTHERS_NAMED = 2


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
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
    # one MMA instruction does the work of hundreds of FMAs: a small share is no overhead sign
    if main.share_pct >= MATH_SHARE or main.name == "tensor":
        return [Finding(
            rule=NAME, kind="info",
            title=f"{main.name} math is {fmt(main.share_pct)}% of executed instructions "
            f"({opcode} {fmt(opcode_share)}%).",
            text=f"The rest: {rest} ({SECTION}).",
            section=SECTION, metrics=metrics,
            evidence=(ev(profile, "class:tensor", ">", 0.0),) if main.name == "tensor"
            else (ev(profile, f"class:{main.name}", ">=", MATH_SHARE), *fp16),
        )]
    return [Finding(
        rule=NAME, kind="info",
        title=f"{opcode} is only {fmt(opcode_share)}% of executed instructions: {rest} take "
        "most of the rest.",
        text=f"The main math class, {main.name}, is {fmt(main.share_pct)}% of the executed "
        f"warp instructions; every other instruction is overhead the math pays for "
        f"({SECTION}).",
        section=SECTION, weight=MATH_SHARE - main.share_pct, metrics=metrics,
        evidence=(ev(profile, f"class:{main.name}", "<", MATH_SHARE), *fp16),
    )]
