"""The limiting pipe, and GEMM-like kernels off their math pipe (Compute Workload Analysis)."""

from __future__ import annotations

import dataclasses

from findings_support import naive, prose, smem

from harness.findings import pipes
from harness.report.model import PipeUse


def test_pipes_are_read_from_the_compute_workload_breakdown():
    # ncu Compute Workload Analysis, sgemm_smem: LSU the busiest pipe
    top = pipes.busiest_pipes(smem())[0]
    assert (top.pipe, top.label) == ("lsu", "LSU")
    assert f"{top.pct:.1f}" == "75.9"
    assert f"{smem().pipe('fma', 'cycles'):.1f}" == "14.7"


def test_gemm_like_kernel_on_the_lsu_pipe_is_flagged(golden):
    [finding] = pipes.check(smem())
    assert finding.kind == "bad"
    assert finding.metrics["expected_pipe"] == "fma"
    golden("smem_off_pipe", prose([finding]))  # LSU (75.9%), not FMA (14.7%)


def test_off_pipe_needs_the_wrong_pipe_busy_edge():
    def with_lsu(pct: float):
        uses = (PipeUse("lsu", "LSU", "instructions", pct), PipeUse("fma", "FMA", "cycles", 5.0))
        return dataclasses.replace(smem(), pipes=uses)

    assert pipes.check(with_lsu(pipes.OFF_PIPE_MIN))[0].kind == "bad"
    assert pipes.check(with_lsu(pipes.OFF_PIPE_MIN - 0.01))[0].kind == "info"


def test_idle_pipes_are_only_information(golden):
    # sgemm_naive waits on memory: LSU 6.0% is the busiest pipe
    [finding] = pipes.check(naive())
    assert finding.kind == "info"
    golden("naive_idle_pipes", prose([finding]))


def test_a_busy_pipe_binds_at_the_edge(golden):
    def busy(pipe: str, pct: float):
        return dataclasses.replace(naive(), pipes=(PipeUse(pipe, pipe.upper(), "cycles", pct),),
                                   instruction_mix=(), instruction_classes=())

    assert pipes.check(busy("xu", pipes.BUSY))[0].kind == "bad"
    assert "XU" in pipes.check(busy("xu", pipes.BUSY))[0].title
    assert pipes.check(busy("xu", pipes.BUSY - 0.01))[0].kind == "info"
    golden("fp64_bound", prose(pipes.check(busy("fp64", 90.0))))  # use a faster pipe
    assert pipes.check(busy("fma", 90.0))[0].kind == "good"


def test_gemm_like_needs_mostly_fused_multiply_adds():
    # both fixture kernels are SGEMMs: FFMA is 99.9% of their FP32 instructions
    assert pipes.math_opcode_share(naive()) is not None
    cls, share = pipes.math_opcode_share(naive())
    assert cls == "FP32" and share > 99.0
    assert pipes.expected_pipe(naive()) == "fma"
