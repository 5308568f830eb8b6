"""Which SM pipe is busiest, and whether a GEMM-like kernel runs on the pipe it should.

ncu's Compute Workload Analysis measures each pipe twice over the SM's active cycles: issued
instructions against the pipe's peak issue rate (`sm__inst_executed_pipe_<p>`) and cycles the
pipe is busy (`sm__pipe_<p>_cycles_active`). The higher of the two is the pipe's utilization.
A pipe near its peak binds the kernel: the math pipes (FMA, FP64, tensor) are where a compute
kernel should be busy; ALU, LSU, ADU, XU or the uniform pipe busiest means overhead or
special functions bind instead.
"""

from __future__ import annotations

from harness.findings.evidence import Evidence, ev
from harness.findings.model import Finding, fmt
from harness.report import MATH_CLASSES, KernelReport, PipeUse

NAME = "pipes"
SECTION = "Compute Workload Analysis"
BUSY = 60.0  # percent of peak: the pipe binds (ncu's "high utilization" starts at 60% too)
OFF_PIPE_MIN = 30.0  # percent: a non-math pipe this busy in a GEMM-like kernel is worth a word
GEMM_FMA_SHARE = 50.0  # percent of math instructions that are fused multiply-adds or MMAs
# A GEMM spends its instructions on math: below this share of executed instructions (scalar
# math; one MMA does the work of hundreds) the multiply-adds are a side line of another kernel
GEMM_MATH_SHARE = 20.0
# A kernel of warp shuffles or atomics is a sum or a histogram, whatever its math is
OTHER_WORK_SHARE = 5.0
SUMMARY_PIPES = 3

# pipe stem -> words for the reader; pipes not listed use ncu's label
_WORDS = {
    "fma": "FMA (FP32 and integer multiply-add)",
    "fmaheavy": "FMA-heavy",
    "fp64": "FP64 (double precision)",
    "xu": "XU (transcendentals: sin, cos, exp, rsqrt; conversions)",
    "lsu": "LSU (loads, stores, shared memory)",
    "alu": "ALU (integer and logic, comparisons)",
    "adu": "ADU (branches, block barriers, constant loads)",
    "uniform": "uniform datapath",
    "tensor": "tensor",
    "tensor_op_hmma": "tensor (FP16/BF16/TF32 MMA)",
    "tensor_op_gmma": "tensor (warpgroup MMA)",
    "tensor_op_dmma": "tensor (FP64 MMA)",
    "tensor_op_imma": "tensor (integer MMA)",
    "shared": "shared FP16+tensor",
}
# pipes where a compute kernel should be busy
_MATH_PIPES = {"fma", "fmaheavy", "fp64", "tensor", "tensor_op_hmma", "tensor_op_gmma",
               "tensor_op_dmma", "tensor_op_imma", "shared"}
_FMA_OPCODES = {"FFMA", "DFMA", "HFMA2", "HMMA", "HGMMA", "DMMA", "IMMA", "IGMMA", "QGMMA"}
_TENSOR = {"tensor", "tensor_op_hmma", "tensor_op_gmma", "tensor_op_dmma", "tensor_op_imma",
           "shared"}


# pipes whose name does not say what they run: the opcodes that keep them busy
_CONTENT = {"adu": ("branches and barriers", ("BRA", "BAR", "LDC"))}


def words(pipe: str) -> str:
    return _WORDS.get(pipe, pipe.upper())


def content(pipe: str) -> str:
    """A few words on what busies a pipe whose name does not say it ("" when it does)."""
    return _CONTENT[pipe][0] if pipe in _CONTENT else ""


def _opcode_counts(profile: KernelReport, pipe: str) -> str:
    """The executed counts of the opcodes that keep `pipe` busy, e.g. "BRA 18,874,368"."""
    wanted = _CONTENT[pipe][1] if pipe in _CONTENT else ()
    found = {o.opcode: o for o in profile.instruction_mix if o.opcode in wanted}
    return ", ".join(f"{op} {fmt(found[op].executed, 0)} ({fmt(found[op].share_pct)}%)"
                     for op in wanted if op in found)


def busiest_pipes(profile: KernelReport) -> list[PipeUse]:
    """One entry per pipe (its higher measure), busiest first. Sums of other pipes are left
    out: "Shared (FP16+Tensor)", which on Hopper also carries FP64 (an FP64 kernel shows it
    as busy as the FP64 pipe), and "Tensor (All)" where a specific tensor pipe is listed."""
    best: dict[str, PipeUse] = {}
    for use in profile.pipes:
        if use.pipe not in best or use.pct > best[use.pipe].pct:
            best[use.pipe] = use
    best.pop("shared", None)
    if any(name.startswith("tensor_op_") for name in best):
        best.pop("tensor", None)
    return sorted(best.values(), key=lambda u: (-u.pct, u.pipe))


def math_opcode_share(profile: KernelReport) -> tuple[str, float] | None:
    """The math class with most instructions, and the share of fused multiply-adds (and MMAs)
    among all math instructions; None without math."""
    math = [c for c in profile.instruction_classes if c.name in MATH_CLASSES]
    total = sum(c.executed for c in math)
    if not total:
        return None
    fma = sum(o.executed for o in profile.instruction_mix if o.opcode in _FMA_OPCODES)
    return math[0].name, 100.0 * fma / total


def gemm_evidence(profile: KernelReport) -> tuple[Evidence, ...]:
    """What calling a kernel GEMM-like rests on: multiply-adds (or MMAs) are most of its
    math, math is a real share of its instructions (MMAs excepted), and shuffles and atomics
    are not (those make a sum or a histogram)."""
    share = math_opcode_share(profile)
    found = [ev(profile, "fma_share_of_math_pct", ">=", GEMM_FMA_SHARE),
             ev(profile, "shuffle_share_pct", "<", OTHER_WORK_SHARE),
             ev(profile, "atomic_share_pct", "<", OTHER_WORK_SHARE)]
    if share is None or share[0] != "tensor":
        found.insert(1, ev(profile, "math_share_pct", ">=", GEMM_MATH_SHARE))
    if share is not None and share[0] == "FP16":
        # half-precision math needs its own opcodes executed, not only a class name
        found.append(ev(profile, "hfma2_share_of_math_pct", ">=", GEMM_FMA_SHARE))
    return tuple(found)


def expected_pipe(profile: KernelReport) -> str | None:
    """The pipe a GEMM-like kernel's math should keep busy, None when it is not GEMM-like."""
    share = math_opcode_share(profile)
    if share is None or not all(e.holds() for e in gemm_evidence(profile)):
        return None
    return {"FP32": "fma", "FP64": "fp64", "FP16": "tensor", "tensor": "tensor"}.get(share[0])


def _summary(uses: list[PipeUse]) -> str:
    return ", ".join(f"{u.label} {fmt(u.pct)}%" for u in uses[:SUMMARY_PIPES])


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    uses = busiest_pipes(profile)
    if not uses:
        return []
    top = uses[0]
    metrics: dict[str, float | str] = {"pipe": top.pipe, "pipe_pct": top.pct}
    summary = _summary(uses)
    findings: list[Finding] = []
    expected = expected_pipe(profile)
    if expected is not None:
        metrics["expected_pipe"] = expected
        on_pipe = (top.pipe in _TENSOR) if expected == "tensor" else top.pipe == expected
        share = math_opcode_share(profile)
        math_class = share[0] if share else "?"
        if expected == "tensor" and not on_pipe and math_class == "FP16":
            findings.append(Finding(
                rule=NAME, kind="bad",
                title=f"Half-precision multiply-adds run on the FMA pipe as HFMA2, not on the "
                f"tensor cores (busiest pipe {top.label} at {fmt(top.pct)}%).",
                text=f"The math is FP16 fused multiply-adds; the tensor pipes idle. Busiest "
                f"pipes: {summary} ({SECTION}).",
                section=SECTION, weight=100.0 - top.pct, metrics=metrics,
                evidence=gemm_evidence(profile),
                fix_title="Use the tensor cores.",
                fix_text="Matrix-multiply-shaped FP16 work runs many times faster as MMA "
                "instructions (WMMA/MMA, or a tensor-core GEMM library) than as HFMA2.",
                what_if="What if the inner product used mma.sync (or a library tensor-core GEMM) "
                "instead of scalar half-precision FMAs?",
            ))
        elif not on_pipe and top.pipe not in _MATH_PIPES and top.pct >= OFF_PIPE_MIN:
            expected_use = next((u for u in uses if (u.pipe in _TENSOR if expected == "tensor"
                                                     else u.pipe == expected)), None)
            expected_text = (f"{expected_use.label} ({fmt(expected_use.pct)}%)"
                             if expected_use else words(expected))
            findings.append(Finding(
                rule=NAME, kind="bad",
                title=f"A GEMM-like kernel whose busiest pipe is {top.label} "
                f"({fmt(top.pct)}%), not {expected_text}: overhead, not math, occupies the SM.",
                text=f"Most math instructions are fused multiply-adds ({math_class}), yet the "
                f"{words(top.pipe)} pipe is the busiest, ahead of {words(expected)}. Busiest "
                f"pipes: {summary} ({SECTION}).",
                section=SECTION, weight=top.pct, metrics=metrics,
                evidence=(*gemm_evidence(profile),
                          ev(profile, f"pipe:{top.pipe}", ">=", OFF_PIPE_MIN)),
                fix_title="Feed the math pipe.",
                fix_text="Each multiply-add pays for loads and address arithmetic; reusing "
                "operands from registers raises the share of math instructions.",
                what_if="What if each thread computed a register tile of outputs, so every "
                "loaded value fed several multiply-adds?",
            ))
    if top.pct >= BUSY and not findings:
        findings.append(_busy_finding(profile, top, summary, metrics))
    elif not findings:
        findings.append(Finding(
            rule=NAME, kind="info",
            title=f"No pipe is near its peak: the busiest is {top.label} at {fmt(top.pct)}%.",
            text=f"Busiest pipes: {summary} ({SECTION}).",
            section=SECTION, weight=0.0, metrics=metrics,
            evidence=(ev(profile, f"pipe:{top.pipe}", "<", BUSY),),
        ))
    return findings


def _busy_finding(profile: KernelReport, top: PipeUse, summary: str,
                  metrics: dict[str, float | str]) -> Finding:
    name = words(top.pipe)
    if top.pipe in _TENSOR or top.pipe in ("fma", "fmaheavy"):
        # the pipes a compute kernel should keep busy: the work is where it belongs
        return Finding(
            rule=NAME, kind="good",
            title=f"The math runs on the {name} pipe at {fmt(top.pct)}% of its peak.",
            text=f"Busiest pipes: {summary} ({SECTION}).",
            section=SECTION, weight=top.pct, metrics=metrics,
            evidence=(ev(profile, f"pipe:{top.pipe}", ">=", BUSY),),
        )
    fixes = {
        "fp64": ("Use a faster pipe for the FP64 math.",
                 "FP64 runs at a fraction of the FP32 rate; DMMA tensor cores (Hopper, Ampere) "
                 "run matrix-shaped FP64 work at twice the FP64 pipe's rate.",
                 "What if the parts that do not need double precision ran in FP32, or the "
                 "matrix-shaped part used DMMA (a library DGEMM)?"),
        "xu": ("Call fewer transcendental functions.",
               "The XU pipe (MUFU: sin, cos, exp2, rsqrt, reciprocal) issues at a quarter of "
               "the FMA rate or less.",
               "What if the transcendental calls were hoisted out of the loop, replaced by "
               "identities (sin/cos of a sum from one sincos), or by a polynomial on the FMA "
               "pipe?"),
        "lsu": ("Issue fewer memory instructions.",
                "Every load and store instruction, shared or global, takes an LSU issue slot.",
                "What if loads were vectorized (float4) or operands kept in registers, so "
                "fewer memory instructions are issued?"),
        "adu": ("Cut loop and barrier overhead.",
                "The ADU issues branches, block-wide barriers and constant loads: every loop "
                "step that ends in a barrier pays for all three, whatever work it does.",
                "What if the loops were unrolled (trip counts known at compile time) and the "
                "steps where a single warp works synchronized with the warp, not the block?"),
        "alu": ("Cut the integer and logic overhead.",
                "Index arithmetic, comparisons and bit operations take the ALU.",
                "What if index arithmetic were hoisted out of the inner loop (increments "
                "instead of multiplies, unrolling)?"),
    }
    fix_title, fix_text, what_if = fixes.get(top.pipe, (None, None, None))
    busy_with = content(top.pipe)
    counts = _opcode_counts(profile, top.pipe)
    return Finding(
        rule=NAME, kind="bad",
        title=f"The {name} pipe binds the kernel: {fmt(top.pct)}% of its peak"
        + (f", busy with {busy_with}: control overhead, not the kernel's work." if busy_with
           else "."),
        text=f"Busiest pipes: {summary} ({SECTION})"
        + (f"; executed {counts} (Instruction Statistics)" if counts else "") + ".",
        section=SECTION, weight=top.pct, metrics=metrics,
        fix_title=fix_title, fix_text=fix_text, what_if=what_if,
        evidence=(ev(profile, f"pipe:{top.pipe}", ">=", BUSY),),
    )
