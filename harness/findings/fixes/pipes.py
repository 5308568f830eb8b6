"""Fix ideas for a busy pipe, by the work that keeps it busy (`findings.pipe_work`): the math
of a GEMM on the wrong pipe, FP64, conversions, branches, constant loads, integer arithmetic;
and for a change that made the kernel slower."""

from __future__ import annotations

from harness.findings.evidence import ev
from harness.findings.fixes.base import FixRule
from harness.findings.model import Finding, FixIdea
from harness.report import KernelReport

BUSY = 60.0  # percent of peak
CARRIES = 50.0  # percent of the pipe's instructions of one kind


def _busy_with(finding: Finding, pipe: str, work: str) -> bool:
    return (finding.rule == "pipes" and finding.metrics.get("pipe") == pipe
            and finding.metrics.get("work") == work)


def use_tensor_cores(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """Half-precision multiply-adds run as HFMA2 on the FMA pipe."""
    if finding.rule != "pipes" or "HFMA2" not in finding.title:
        return None
    return FixIdea(
        "use_tensor_cores", "Use the tensor cores.",
        "Matrix-multiply-shaped FP16 work runs many times faster as MMA instructions "
        "(WMMA/MMA, or a tensor-core GEMM library) than as HFMA2.",
        "What if the inner product used mma.sync (or a library tensor-core GEMM) instead of "
        "scalar half-precision FMAs?",
        (ev(profile, "fp16_executed", ">", 0.0), ev(profile, "mma_executed", "<=", 0.0)))


def register_tile(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """A GEMM-like kernel whose busiest pipe is not its math."""
    if finding.rule != "pipes" or "GEMM-like" not in finding.title:
        return None
    return FixIdea(
        "register_tile", "Feed the math pipe.",
        "Each multiply-add pays for loads and address arithmetic; reusing operands from "
        "registers raises the share of math instructions.",
        "What if each thread computed a register tile of outputs, so every loaded value fed "
        "several multiply-adds?",
        (ev(profile, "fma_share_of_math_pct", ">=", CARRIES),))


def fp64_elsewhere(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The FP64 pipe binds."""
    if finding.rule != "pipes" or finding.metrics.get("pipe") != "fp64":
        return None
    return FixIdea(
        "fp64_elsewhere", "Use a faster pipe for the FP64 math.",
        "FP64 runs at a fraction of the FP32 rate; DMMA tensor cores run matrix-shaped FP64 "
        "work at twice the FP64 pipe's rate.",
        "What if the parts that do not need double precision ran in FP32, or the "
        "matrix-shaped part used DMMA (a library DGEMM)?",
        (ev(profile, "pipe:fp64", ">=", BUSY), ev(profile, "opcode:DFMA", ">", 0.0)))


def cheaper_conversions(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The XU pipe is busy with type conversions (integer division and modulo by a run-time
    value compile to a float reciprocal and conversions)."""
    if not _busy_with(finding, "xu", "conversion"):
        return None
    return FixIdea(
        "cheaper_conversions", "Convert less.",
        "The XU pipe, a quarter of the FMA rate, spends its issue slots on conversions: an "
        "integer division or modulo by a run-time value becomes a float reciprocal (I2F, "
        "MUFU.RCP, F2I) on it.",
        "What if divisors were powers of two (shifts and masks) or compile-time constants, "
        "and values stayed in one type through the loop?",
        (ev(profile, "pipe_work:xu:conversion", ">=", CARRIES),))


def unroll_the_loops(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The ADU pipe is busy with branches."""
    if not _busy_with(finding, "adu", "branch"):
        return None
    return FixIdea(
        "unroll_the_loops", "Cut the loop overhead.",
        "The ADU issues every branch: a loop with little work per step pays a branch for it.",
        "What if the loops were unrolled (trip counts known at compile time, #pragma unroll)?",
        (ev(profile, "pipe_work:adu:branch", ">=", CARRIES),))


def fewer_barrier_steps(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The ADU pipe is busy with block barriers."""
    if not _busy_with(finding, "adu", "barrier"):
        return None
    return FixIdea(
        "fewer_barrier_steps", "Synchronize fewer times.",
        "The ADU issues every block barrier: a barrier per short step keeps it busy.",
        "What if the steps where a single warp works synchronized with the warp (__syncwarp, "
        "shuffles), not the block?",
        (ev(profile, "pipe_work:adu:barrier", ">=", CARRIES),))


def constants_in_registers(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The ADU pipe is busy with constant loads."""
    if not _busy_with(finding, "adu", "constant"):
        return None
    return FixIdea(
        "constants_in_registers", "Load constants once.",
        "The ADU issues constant loads (LDC); a loop that reloads kernel parameters or "
        "indexes a constant table keeps it busy.",
        "What if the values were loaded into registers before the loop, or an indexed table "
        "moved to shared memory?",
        (ev(profile, "pipe_work:adu:constant", ">=", CARRIES),))


def hoist_index_math(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The ALU is busy with integer and logic instructions."""
    if finding.rule != "pipes" or finding.metrics.get("pipe") != "alu":
        return None
    return FixIdea(
        "hoist_index_math", "Cut the integer and logic overhead.",
        "Index arithmetic, comparisons and bit operations take the ALU.",
        "What if index arithmetic were hoisted out of the inner loop (increments instead of "
        "multiplies, unrolling)?",
        (ev(profile, "pipe:alu", ">=", BUSY),))


def fewer_lsu_instructions(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The LSU is busy with scalar global or shared accesses."""
    for work, vector, extra in (
            ("global", "vector:global_load", ("global_excess_pct", "<", 10.0)),
            ("shared", "vector:shared_load", None)):
        if _busy_with(finding, "lsu", work):
            conditions = [ev(profile, f"pipe_work:lsu:{work}", ">=", CARRIES),
                          ev(profile, vector, "<=", 10.0)]
            if extra is not None:
                conditions.append(ev(profile, *extra))  # type: ignore[arg-type]
            return FixIdea(
                "fewer_lsu_instructions", "Issue fewer memory instructions.",
                f"Every {work} load and store takes an LSU issue slot, and these are 32-bit.",
                f"What if {work} memory were accessed as 128-bit vectors (float4), so four "
                "words take one LSU slot?", tuple(conditions))
    return None


def find_the_regression(profile: KernelReport, finding: Finding) -> FixIdea | None:
    """The kernel got slower than the previous iteration."""
    if finding.rule != "progress" or not finding.title.startswith("Regression"):
        return None
    return FixIdea(
        "find_the_regression", "Find what the change broke.",
        "The same work takes longer than in the previous iteration.",
        "What if the change were split in two, to see which half costs the time?", ())


RULES = tuple(FixRule(f.__name__, answers, f) for f, answers in (
    (use_tensor_cores, ("pipes",)),
    (register_tile, ("pipes",)),
    (fp64_elsewhere, ("pipes",)),
    (cheaper_conversions, ("pipes",)),
    (unroll_the_loops, ("pipes",)),
    (fewer_barrier_steps, ("pipes",)),
    (constants_in_registers, ("pipes",)),
    (hoist_index_math, ("pipes",)),
    (fewer_lsu_instructions, ("pipes",)),
    (find_the_regression, ("progress",)),
))
