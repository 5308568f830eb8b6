"""The claims audit: every finding on every committed report rests on evidence it declares,
and that evidence, read again from the report, bears the claim out.

Reports: the zoo, the reduction chain's run, the SGEMM fixtures (H100 and H200), the pairs and
the benchmark data. A claim that names a kind of work (FP16 math, GEMM-like, atomics) needs
that work's opcodes executed; a share of a whole never exceeds 100%.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

import pytest
from packed_fixtures import (
    H100_PAGES_EARLIER_NAIVE,
    H100_PAGES_NAIVE,
    H100_PAGES_SMEM_TILED,
    H200_RUN,
    REDUCTION_RUN,
    cached_profiles,
    reports,
)

from harness.findings import evidence, pipes, run_rules, vectorization
from harness.findings.model import Finding
from harness.report.model import InstructionClass, KernelReport, OpcodeCount, PipeUse

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
FOLDERS = [FIXTURES, FIXTURES / "zoo", REDUCTION_RUN, H200_RUN, FIXTURES / "async_copy_pair",
           FIXTURES / "divergence_pair", ROOT / "benchmarks" / "data"]
# the other sample runs in reports/ that were recorded as fixtures
SAMPLES = [H100_PAGES_NAIVE, H100_PAGES_SMEM_TILED, H100_PAGES_EARLIER_NAIVE]
# rules whose verdicts compare two iterations, or repeat ncu's own words: no measure of one
# profile can bear them out
UNMEASURED = ("progress", "ncu_rules")
PERCENT = re.compile(r"(\d[\d,]*(?:\.\d+)?)%")


def _all_reports() -> list[Path]:
    return [*(path for folder in FOLDERS for path in reports(folder)), *SAMPLES]


def _profiles(path: Path) -> tuple[KernelReport, ...]:
    # read once per test process, shared with the other modules that read the fixtures
    return tuple(cached_profiles(path))


@functools.cache
def _findings(path: Path) -> tuple[tuple[KernelReport, tuple[Finding, ...]], ...]:
    return tuple((p, tuple(run_rules(p))) for p in _profiles(path))


REPORTS = _all_reports()


def test_the_audit_reads_every_committed_report():
    names = {p.name for p in REPORTS}
    assert len(REPORTS) >= 57, sorted(names)
    assert {"zoo_atomic_same.ncu-rep", "warp_shuffle_67108864.ncu-rep",
            "naive_256.ncu-rep", "h100_sgemm_naive_smem.ncu-rep",
            # the Hopper-era zoo
            "zoo_bf16_gemm.ncu-rep", "zoo_fp8_gemm.ncu-rep", "zoo_cluster_dsmem.ncu-rep",
            "zoo_atomic_scattered.ncu-rep", "zoo_polling.ncu-rep"} <= names


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_verdict_rests_on_evidence_that_holds(path: Path):
    for profile, findings in _findings(path):
        for f in findings:
            if f.rule in UNMEASURED:
                continue
            # every claim of ours names its evidence, asides too (a "not judged" keeps the
            # evidence that failed, and says so)
            assert f.evidence, (profile.name, f.title)
            if f.title.startswith("Not judged"):
                assert evidence.failing(profile, f.evidence), (profile.name, f.title)
                continue
            # what a finding declares is what the report says, read again
            assert evidence.failing(profile, f.evidence) == [], (profile.name, f.title)
            for e in f.evidence:
                assert e.value == evidence.read(profile, e.measure), (profile.name, e)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_no_share_exceeds_the_whole(path: Path):
    for profile, findings in _findings(path):
        for f in findings:
            for value in PERCENT.findall(f"{f.title} {f.text}"):
                assert float(value.replace(",", "")) <= 100.0, (profile.name, f.title)


def _claims_hold(profile: KernelReport, f: Finding) -> None:
    title = f.title.lower()
    if f.rule in UNMEASURED or title.startswith("not judged"):
        return
    if "hfma2" in title or "half-precision" in title:
        assert (evidence.read(profile, "fp16_executed") or 0) > 0, (profile.name, f.title)
    if "gemm-like" in title:
        assert all(e.holds() for e in pipes.gemm_evidence(profile)), (profile.name, f.title)
    if "atomics" in title:
        assert (evidence.read(profile, "atomic_executed") or 0) > 0, (profile.name, f.title)
    if "streaming" in title:
        assert (evidence.read(profile, "dram_pct") or 0) >= 60, (profile.name, f.title)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_classifications_have_their_opcodes(path: Path):
    for profile, findings in _findings(path):
        for f in findings:
            _claims_hold(profile, f)


# ---------------------------------------------------------------------------------------------
# the false claims once made, rebuilt from real reports


def _one(folder: Path, name: str) -> KernelReport:
    [path] = [p for p in reports(folder) if p.name == name]
    return _profiles(path)[0]


def test_float_atomics_without_fp16_are_never_told_hfma2():
    real = _one(FIXTURES / "zoo", "zoo_atomic_same.ncu-rep")
    assert evidence.read(real, "fp16_executed") == 0
    # classes that say FP16 while no FP16 opcode executed: the opcodes decide
    mislabeled = dataclasses.replace(
        real,
        instruction_classes=(InstructionClass("FP16", 1000.0, 60.0, ("FADD",)),
                             *real.instruction_classes),
        pipes=(PipeUse("fma", "FMA", "instructions", 40.0), *real.pipes))
    assert pipes.expected_pipe(mislabeled) is None
    for f in run_rules(mislabeled):
        assert "HFMA2" not in f.title and "alf-precision" not in f.title, f.title
    assert "same-address atomics serialize" in run_rules(mislabeled)[0].title.lower()


def test_a_shuffle_reduction_is_not_gemm_like():
    real = _one(REDUCTION_RUN, "warp_shuffle_67108864.ncu-rep")
    # its adds as multiply-adds and a busy LSU: the shape of the false claim; math is still
    # a side line of its instructions (the loads and the index arithmetic are the work)
    as_fma = tuple(OpcodeCount("FFMA" if o.opcode == "FADD" else o.opcode, o.executed,
                               o.share_pct) for o in real.instruction_mix)
    classes = tuple(dataclasses.replace(c, opcodes=("FFMA",)) if c.name == "FP32" else c
                    for c in real.instruction_classes)
    shaped = dataclasses.replace(real, instruction_mix=as_fma, instruction_classes=classes,
                                 pipes=(PipeUse("lsu", "LSU", "instructions", 45.0),
                                        *real.pipes))
    assert evidence.read(shaped, "fma_share_of_math_pct") == pytest.approx(100.0)
    assert evidence.read(shaped, "math_share_pct") == pytest.approx(14.3, abs=0.1)
    assert pipes.expected_pipe(shaped) is None
    assert not any("GEMM-like" in f.title for f in run_rules(shaped))


def test_gemm_like_boundaries():
    smem = _one(FIXTURES, "h100_sgemm_naive_smem.ncu-rep")
    [_, tiled] = _profiles(next(p for p in REPORTS if p.name == "h100_sgemm_naive_smem.ncu-rep"))
    assert smem.name == "sgemm_naive" and tiled.name == "sgemm_smem"
    # the tiled SGEMM is GEMM-like: FFMA 99.9% of its math, math 37.3% of its instructions
    assert pipes.expected_pipe(tiled) == "fma"
    held = {e.measure: e.value for e in pipes.gemm_evidence(tiled)}
    assert held["fma_share_of_math_pct"] == pytest.approx(99.9, abs=0.01)
    assert held["math_share_pct"] == pytest.approx(37.3, abs=0.1)
    # a shuffle share at the threshold makes it a reduction, one just below does not
    total = sum(o.executed for o in tiled.instruction_mix)

    def with_shuffles(share_pct: float) -> KernelReport:
        n = share_pct / 100.0 * total / (1 - share_pct / 100.0)
        return dataclasses.replace(
            tiled, instruction_mix=(*tiled.instruction_mix, OpcodeCount("SHFL", n, 0.0)))

    assert pipes.expected_pipe(with_shuffles(pipes.OTHER_WORK_SHARE)) is None
    assert pipes.expected_pipe(with_shuffles(pipes.OTHER_WORK_SHARE - 0.1)) == "fma"


def test_a_share_beyond_its_whole_is_not_stated():
    real = _one(FIXTURES / "zoo", "zoo_stream_dram.ncu-rep")
    [bad] = [f for f in vectorization.check(real) if f.kind == "bad"]
    assert "(20.0% of executed instructions)" in bad.title
    # counters that disagree (the parts add up to more than the whole): no share over 100%
    scalar = sum(w.executed for w in real.memory_widths.accesses if w.width_bits == 32
                 and w.space == "global")
    broken = dataclasses.replace(real, instruction_mix=(OpcodeCount("LDG", scalar / 1.047,
                                                                    100.0),))
    [bad] = [f for f in vectorization.check(broken) if f.kind == "bad"]
    assert "not judged: the counters disagree" in bad.title
    assert not any(float(v) > 100 for v in PERCENT.findall(bad.title))
    assert evidence.share_of_whole(104.7, 100.0) is None
    assert evidence.share_of_whole(100.0, 100.0) == 100.0


def test_missing_evidence_is_not_judged():
    real = _one(FIXTURES / "zoo", "zoo_fp64.ncu-rep")
    [busy] = [f for f in run_rules(real) if f.rule == "pipes"]
    assert busy.kind == "bad" and busy.because == "FP64 pipe (% of peak) 86.66 ≥ 60"
    # the pipe counters not collected: the verdict becomes "not judged", with the reason
    from harness.findings.registry import _judged

    judged = _judged(busy, dataclasses.replace(real, pipes=()))
    assert judged.kind == "info" and judged.what_if is None
    assert judged.title == ("Not judged (Compute Workload Analysis): FP64 pipe (% of peak) "
                            "not collected ≥ 60.")


# ---------------------------------------------------------------------------------------------
# the zoo's atomics, barrier and shuffle kernels, as their pages read


ZOO_ATOMICS = ("zoo_atomic_same", "zoo_atomic_shared", "zoo_atomic_scattered")
ZOO_EXCHANGE = ("zoo_barrier", "zoo_cluster_sync", "zoo_warp_shuffle", "zoo_warp_vote")


@functools.cache
def _page(name: str) -> tuple[str, str]:
    from harness.pages import collect, render

    [path] = [p for p in reports(FIXTURES / "zoo") if p.name == f"{name}.ncu-rep"]
    writeup = collect([path])
    [page] = writeup.pages
    return render.render_page(page, writeup, "md"), render.render_page(page, writeup, "html")


def _claim_lines(markdown: str) -> list[str]:
    """The page's lines that state something of ours (not the opcode tables or the listing,
    and not an aside that says what was not judged)."""
    return [line for line in markdown.splitlines()
            if not line.startswith("|") and "Not judged" not in line
            and "needs:" not in line and "*because*" not in line]


@pytest.mark.parametrize("name", ZOO_ATOMICS)
def test_atomics_pages_claim_no_half_precision_math(name: str):
    markdown, html = _page(name)
    for line in _claim_lines(markdown):
        assert "HFMA2 is" not in line and "half-precision" not in line.lower(), line
        assert "FP16 math" not in line, line
    assert "HFMA2 is only" not in html


def test_hfma2_register_moves_are_not_fp16_math(golden):
    scattered = _one(FIXTURES / "zoo", "zoo_atomic_scattered.ncu-rep")
    shared = _one(FIXTURES / "zoo", "zoo_atomic_shared.ncu-rep")
    # ptxas's constant loads (HFMA2.MMA Rd, -RZ, RZ, imm) with the FP16 pipe idle
    assert evidence.executed(scattered, ("HFMA2",)) == 135_168
    assert evidence.register_moves(scattered) == 135_168
    assert evidence.executed(shared, ("HFMA2",)) == 67_584
    assert evidence.read(scattered, "fp16_executed") == 0
    assert evidence.read(shared, "fp16_executed") == 0
    [mix] = [f for f in run_rules(scattered) if f.rule == "instruction_mix"]
    assert mix.kind == "info" and mix.what_if is None
    assert mix.title.startswith("Not judged (Instruction Statistics): ")
    golden("hfma2_moves_not_judged", mix.title)
    # the same instructions with the FP16 pipe at work are half-precision math again
    busy = dataclasses.replace(
        scattered, pipes=(PipeUse("fma_type_fp16", "FMA (FP16)", "instructions", 0.1),
                          *scattered.pipes))
    assert evidence.register_moves(busy) == 0
    assert evidence.read(busy, "fp16_executed") == 135_168
    [mix] = [f for f in run_rules(busy) if f.rule == "instruction_mix"]
    assert mix.title.startswith("HFMA2 is only 3.8% of executed instructions")


@pytest.mark.parametrize("name", ZOO_EXCHANGE)
def test_barrier_and_shuffle_kernels_are_not_gemm_like(name: str):
    real = _one(FIXTURES / "zoo", f"{name}.ncu-rep")
    assert pipes.expected_pipe(real) is None
    markdown, html = _page(name)
    assert "GEMM-like" not in markdown and "GEMM-like" not in html


@pytest.mark.parametrize("name", (*ZOO_ATOMICS, *ZOO_EXCHANGE, "zoo_polling"))
def test_zoo_pages_state_no_share_over_the_whole(name: str):
    markdown, _ = _page(name)
    for line in _claim_lines(markdown):
        for value in PERCENT.findall(line):
            assert float(value.replace(",", "")) <= 100.0, line


# ---------------------------------------------------------------------------------------------
# the Hopper-era rules' declared evidence, as the pages show it


@pytest.mark.parametrize(("name", "rule", "because"), [
    ("zoo_atomic_scattered", "atomics", "global atomics ATOM/RED (% of executed) 15.31 ≥ 10; "
     "sectors per warp-level global atomic 32 ≥ 4"),
    ("zoo_atomic_shared", "atomics", "ATOMS (% of executed) 20.18 ≥ 10"),
    ("zoo_barrier", "synchronization", "BAR (% of executed) 38.29 ≥ 10"),
    ("zoo_cluster_sync", "synchronization",
     "UCGABAR_ARV/UCGABAR_WAIT/MEMBAR (% of executed) 39.29 ≥ 10"),
    ("zoo_polling", "synchronization", "volatile (strong) global loads (% of executed "
     "instructions) 17.71 ≥ 10; YIELD executed 2,843,968 over 0"),
    ("zoo_cluster_dsmem", "clusters", "blocks per thread-block cluster 2 over 1; "
     "distributed-shared-memory requests (% of executed instructions) 13.75 ≥ 10"),
    ("zoo_warp_shuffle", "warp_primitives", "SHFL (% of executed) 42.36 ≥ 15"),
    ("zoo_warp_vote", "warp_primitives", "VOTE (% of executed) 17.59 ≥ 15"),
    ("zoo_imbalance", "imbalance", "busiest SM's active cycles / the average SM's 13.58 ≥ 1.5"),
    ("zoo_bf16_gemm", "tensor_core", "MMA instructions (WGMMA or mma.sync) executed 2,097,152 "
     "over 0; busiest tensor pipe (% of peak) 95.22 ≥ 80"),
    ("zoo_cudnn_attention", "tensor_core", "MMA instructions (WGMMA or mma.sync) executed "
     "1,114,112 over 0; busiest tensor pipe (% of peak) 63.19 under 80"),
    # its SM throughput is 54.01%: compute-bound by the tensor pipe, as the bound judges it
    ("zoo_cudnn_attention", "bound", "compute side: SM throughput or the MMA kernel's tensor "
     "pipe (% of peak) 63.19 ≥ 60"),
    ("zoo_occupancy_warps", "occupancy", "theoretical occupancy (%) 75 ≥ 60; theoretical "
     "occupancy (%) 75 under 100"),
])
def test_hopper_era_findings_show_their_evidence(name: str, rule: str, because: str):
    real = _one(FIXTURES / "zoo", f"{name}.ncu-rep")
    shown = [f.because for f in run_rules(real) if f.rule == rule]
    assert because in shown, shown


def test_a_dominant_primitive_at_and_below_its_threshold():
    from harness.findings import warp_primitives

    real = _one(FIXTURES / "zoo", "zoo_warp_vote.ncu-rep")

    def vote_at(share: float) -> KernelReport:
        mix = tuple(dataclasses.replace(o, share_pct=share) if o.opcode == "VOTE" else o
                    for o in real.instruction_mix)
        return dataclasses.replace(real, instruction_mix=mix)

    [at] = warp_primitives.check(vote_at(warp_primitives.DOMINANT))
    assert evidence.failing(vote_at(warp_primitives.DOMINANT), at.evidence) == []
    assert warp_primitives.check(vote_at(warp_primitives.DOMINANT - 0.01)) == []
    # the evidence read again from a profile below the threshold does not hold: not judged
    assert [e.measure for e in evidence.failing(vote_at(14.99), at.evidence)] == ["share:VOTE"]
