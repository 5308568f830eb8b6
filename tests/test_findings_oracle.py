"""The contradiction oracle (`harness.findings.oracle`) over every committed report, and each
false sentence the pages once said, rebuilt on a real report: the pages now say what the
counters carry, and the oracle flags the old sentence.

Reports: the zoo, the fixtures, the run directories under `reports/runs/`, the diff pair and the
benchmark data (its packed run directories unpacked).
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest
from packed_fixtures import ARCHIVE, NAIVE_SMEM_REPORT, cached_profiles, reports

from harness.findings import Finding, bound, run_rules
from harness.findings.fixes import fixes_for
from harness.findings.oracle import contradictions, page_contradictions
from harness.pages import writeup
from harness.pages.writeup import collect
from harness.report import math_rates, sites_by_reason
from harness.report.model import KernelReport, OpcodeCount

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ZOO = FIXTURES / "zoo"
PACKED_RUNS = sorted((ROOT / "benchmarks" / "data").glob("*.tar.xz"))


@functools.cache
def _unpacked(archive: Path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="ncuh-oracle-"))
    atexit.register(shutil.rmtree, folder, True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _every_report() -> list[Path]:
    folders = {path.parent for path in FIXTURES.rglob(ARCHIVE)}  # each folder's reports packed
    folders |= {path.parent for path in (ROOT / "reports").rglob("*.ncu-rep*")}  # or .xz
    folders.add(ROOT / "benchmarks" / "data")
    found = [path for folder in sorted(folders) for path in reports(folder)]
    # each process unpacks into a folder of its own: ordered by the path inside the archive
    for archive in PACKED_RUNS:
        inside = _unpacked(archive)
        found += sorted(inside.rglob("*.ncu-rep"), key=lambda p: p.relative_to(inside))
    return found


REPORTS = _every_report()


@pytest.fixture(autouse=True)
def pages_of_the_profiles_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages are written from the profiles the module's tests judge (each report read once
    per process, `cached_profiles`: a second reading says what the first said); how the
    writeup reads its reports, the page tests pin (test_zoo_pages, test_program_pages)."""
    monkeypatch.setattr(writeup, "load_kernel_reports", cached_profiles)


def test_the_oracle_reads_every_committed_report():
    names = {p.name for p in REPORTS}
    assert len(REPORTS) >= 100, len(REPORTS)
    assert {"zoo_spills.ncu-rep", "zoo_fp8_gemm.ncu-rep", "warp_shuffle_67108864.ncu-rep",
            "naive_8192.ncu-rep", "gemm_1024.ncu-rep", "autotuned_4096.ncu-rep",
            "program.ncu-rep", "baseline_naive_1024.ncu-rep", "naive_16777216.ncu-rep",
            "01-nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT.ncu-rep"} <= names


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_sentence_of_any_report_is_contradicted_by_its_counters(path: Path):
    for profile in cached_profiles(path):
        assert contradictions(profile, run_rules(profile)) == [], profile.name


RUNS = [ROOT / "reports" / "runs" / name for name in
        ("reduction-h100-2p26", "softmax_triton-h100-8192", "sgemm-h200-256",
         "transpose-h200")] + [
    min(_unpacked(archive).glob("*/*/")) for archive in PACKED_RUNS]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_no_page_of_any_run_is_contradicted(run: Path):
    """Each page: its findings against their counters, the changes since the previous
    iteration against both, and its TLDR against the limit the run benched."""
    pages = collect([run]).pages
    for page in pages:
        assert page.profile is not None
        assert page_contradictions(page.profile, page.tldr, len(page.fix_ideas),
                                   page.pct_of_limit) == [], page.heading
        previous = next((p.profile for p in pages if p.slug == page.previous_slug), None)
        findings = [*page.findings, *page.good]
        assert contradictions(page.profile, findings, previous) == [], page.heading


# ---------------------------------------------------------------------------------------------
# "A stall reason always gets the same story."


@functools.cache
def zoo(name: str) -> KernelReport:
    [profile] = cached_profiles(next(p for p in reports(ZOO) if p.name == f"{name}.ncu-rep"))
    return profile


def _stall(profile: KernelReport, reason: str) -> Finding:
    return next(f for f in run_rules(profile)
                if f.rule == "stalls" and f.metrics["reason"] == reason)


def _as_if(profile: KernelReport, finding: Finding, carrier: str) -> list[str]:
    """What the oracle says of the same finding told by another class of instructions."""
    told = dataclasses.replace(finding, metrics={**finding.metrics, "carrier": carrier})
    return [c.counters for c in contradictions(profile, [told])]


def test_mio_throttle_without_shared_memory_is_told_by_its_mufu():
    # the transcendental loop executes no shared-memory instruction: its MIO queue holds MUFU
    profile = zoo("zoo_transcendental")
    assert not any(o.opcode in ("LDS", "STS", "LDSM", "STSM") for o in profile.instruction_mix)
    stall = _stall(profile, "mio_throttle")
    assert stall.metrics["carrier"] == "mufu", stall.title
    assert "at special math (MUFU): 100.0% of its samples" in stall.title
    assert "`MUFU.COS R9, R12` at zoo_transcendental.py:11" in stall.text
    # the old story: shared memory, with no shared-memory instruction executed
    assert _as_if(profile, stall, "shared") == [
        "shared carries only 0.0% of the mio_throttle samples"]
    # its short-scoreboard waits (12.0% of the cycles, below a finding) are the MUFU's too
    assert sites_by_reason(profile)["short_scoreboard"].share("mufu") > 99.0
    assert [i.rule for i in fixes_for(profile, stall)] == ["fewer_transcendentals"]


def test_a_short_scoreboard_on_launch_constants_is_not_shared_memory():
    # one atomic per thread: the warps wait on LDC of the block size, not indexed, no LDS
    stall = _stall(zoo("zoo_atomic_same"), "short_scoreboard")
    assert stall.metrics["carrier"] == "constant" and "indexed" not in stall.title
    assert "`LDC R5, c[0x0][RZ]`" in stall.text
    assert [i.rule for i in stall.fixes] == ["amortize_the_prologue"]


def test_lg_throttle_and_long_scoreboard_of_spills_are_local_memory():
    profile = zoo("zoo_spills")
    for reason in ("lg_throttle", "long_scoreboard"):
        stall = _stall(profile, reason)
        assert stall.metrics["carrier"] == "local", stall.title
        assert stall.title.endswith("of its samples, register spills.")
        assert _as_if(profile, stall, "global") == [
            f"global carries only {sites_by_reason(profile)[reason].share('global'):.1f}% of "
            f"the {reason} samples"]
    # told as a per-thread array, the spill count contradicts it
    stall = _stall(profile, "long_scoreboard")
    wrong = dataclasses.replace(stall, title=stall.title.replace("register spills",
                                                                 "a per-thread array"))
    assert [c.counters for c in contradictions(profile, [wrong])] == [
        "register spills are 100.0% of the local loads and stores"]


def test_a_per_thread_array_is_not_spills():
    stall = _stall(zoo("zoo_local_array"), "long_scoreboard")
    assert stall.metrics["carrier"] == "local"
    assert "a per-thread array" in stall.title and "`LDL R2, [R13]`" in stall.text
    assert [i.rule for i in run_rules(zoo("zoo_local_array"))[0].fixes] == [
        "array_out_of_local_memory"]


def test_a_wgmma_gemms_barrier_samples_sit_on_its_warpgroup_waits():
    profile = zoo("zoo_fp8_gemm")
    stall = _stall(profile, "barrier")
    assert stall.metrics["carrier"] == "wgmma"
    assert "92.6% of its samples" in stall.title
    # the hot instruction the page's own SASS table shows is named in the story
    assert "`WARPGROUP.DEPBAR.LE gsb0, 0x0`" in stall.text
    assert _as_if(profile, stall, "block_barrier") == [
        "block_barrier carries only 7.4% of the barrier samples"]


def test_a_block_barrier_kernel_keeps_its_barrier_story():
    stall = _stall(zoo("zoo_barrier"), "barrier")
    assert stall.metrics["carrier"] == "block_barrier"
    assert "block barriers (BAR)" in stall.title


# ---------------------------------------------------------------------------------------------
# "A busy unit explained by the wrong work."


def test_a_busy_pipe_is_named_by_the_work_it_executed():
    [adu] = [f for f in run_rules(zoo("zoo_barrier")) if f.rule == "pipes"]
    assert "busy with block barriers (BAR, 96.5% of its instructions)" in adu.title
    # the same words on a kernel that executes no barrier: contradicted by its opcodes
    stream = zoo("zoo_stream_dram")
    assert not any(o.opcode == "BAR" for o in stream.instruction_mix)
    claim = dataclasses.replace(adu, metrics={**adu.metrics, "pipe": "adu"})
    assert [c.counters for c in contradictions(stream, [claim])] == ["no BAR executed (barrier)"]


# ---------------------------------------------------------------------------------------------
# "Lanes."


def _lanes(active: float, working: float, threads: float | None = None) -> KernelReport:
    real = zoo("zoo_divergence")
    launch = dataclasses.replace(real.launch, block_size=threads or real.launch.block_size)
    return dataclasses.replace(real, launch=launch, divergence=dataclasses.replace(
        real.divergence, active_threads_per_warp=active,
        not_predicated_off_threads_per_warp=working))


def test_real_divergence_is_divergence_not_predication():
    # 26 of 32 lanes active (6 lost to the branches), 23 working (3 more predicated off)
    [finding] = [f for f in run_rules(_lanes(26.0, 23.0)) if f.rule == "divergence"]
    assert finding.metrics["cause"] == "divergence"
    assert "divergent branches run the paths" in finding.title
    assert [i.rule for i in finding.fixes] == ["one_path_per_warp"]
    # at equal losses predication is not named; one lane more predicated off, it is
    [tie] = [f for f in run_rules(_lanes(26.0, 20.0)) if f.rule == "divergence"]
    assert tie.metrics["cause"] == "divergence"
    [more] = [f for f in run_rules(_lanes(26.0, 19.99)) if f.rule == "divergence"]
    assert more.metrics["cause"] == "predication"


def test_small_blocks_cap_the_lanes_without_any_divergence():
    # 8-thread blocks with every lane of them working: the block size, not divergence
    profile = _lanes(8.0, 8.0, threads=8.0)
    [finding] = [f for f in run_rules(profile) if f.rule == "divergence"]
    assert finding.metrics["cause"] == "block_size"
    assert "the 8-thread blocks fill only 8.0 lanes of each warp" in finding.title
    assert [i.rule for i in finding.fixes] == ["full_warps"]
    told = dataclasses.replace(finding, metrics={**finding.metrics, "cause": "divergence"})
    assert contradictions(profile, [told])


# ---------------------------------------------------------------------------------------------
# "Math that is not FP32."


def test_tensor_math_is_the_kernels_math_by_precision():
    fp8 = zoo("zoo_fp8_gemm")
    [tensor] = [r for r in math_rates(fp8) if r.unit == "tensor"]
    # ncu: sm__ops_path_tensor_src_fp8_sparsity_off.sum 137,438,953,472 (2 x 4096^3)
    assert (tensor.precision, tensor.ops, tensor.counted_by) == ("FP8", 137438953472.0, "ncu")
    assert tensor.words == "FP8 (tensor cores) 1,109.5 TFLOP/s"
    [mix] = [f for f in run_rules(fp8) if f.rule == "instruction_mix"]
    assert mix.title.startswith("The tensor cores do the math: 99.6% of the kernel's "
                                "operations are FP8 MMAs")
    wrong = dataclasses.replace(mix, text="every other instruction is overhead the math pays "
                                "for", metrics={})
    assert [c.counters for c in contradictions(fp8, [wrong])] == [
        "1,048,576 MMA instructions executed: the tensor cores do the math"]
    # the tensor pipe by the precision it ran
    [pipe] = [f for f in run_rules(fp8) if f.rule == "pipes"]
    assert "tensor (FP8 MMA) pipe" in pipe.title
    old = dataclasses.replace(pipe, title="The math runs on the tensor (FP16/BF16/TF32 MMA) pipe")
    assert [c.counters for c in contradictions(fp8, [old])] == [
        "the MMAs executed are ['FP8']"]


def test_the_headline_counts_tensor_math():
    [page] = collect([next(p for p in reports(ZOO) if p.name == "zoo_fp8_gemm.ncu-rep")]).pages
    assert [r.words for r in page.math_rates] == ["FP8 (tensor cores) 1,109.5 TFLOP/s",
                                                  "FP32 (SM pipes) 4.3 TFLOP/s"]
    assert page.gflops == pytest.approx(1113.8e3, rel=1e-3)


def test_mma_shapes_count_the_same_operations_as_ncu():
    # without ncu's tensor counters (`--set pages`), the MMA opcodes' shapes give the count
    for name, precision in (("zoo_bf16_gemm", "BF16"), ("zoo_flash_attention", "BF16"),
                            ("zoo_tensor_gemm", "FP16")):
        profile = zoo(name)
        bare = dataclasses.replace(profile, metrics={
            k: v for k, v in profile.metrics.items() if not k.startswith("sm__ops_path")})
        [ncu] = [r for r in math_rates(profile) if r.unit == "tensor"]
        [shapes] = [r for r in math_rates(bare) if r.unit == "tensor"]
        assert (shapes.precision, shapes.counted_by) == (precision, "opcodes")
        assert shapes.ops == ncu.ops


# ---------------------------------------------------------------------------------------------
# "Limits computed wrong."


def test_a_register_lift_counts_the_sub_partitions():
    # 190 registers per thread, one-warp blocks: 8 warps per SM (2 per sub-partition); the
    # SM's whole file would say 224 fits 9, but a sub-partition holds 2 warps of 224
    real = zoo("zoo_occupancy_registers")
    profile = dataclasses.replace(
        real, launch=dataclasses.replace(real.launch, registers_per_thread=190.0,
                                         block_size=32.0),
        occupancy=dataclasses.replace(real.occupancy, block_limits={
            **real.occupancy.block_limits, "registers": 8.0, "warps": 64.0, "blocks": 32.0}))
    [occ] = [f for f in run_rules(profile) if f.rule == "occupancy"
             and f.title.startswith("Theoretical")]
    assert "at most 168 registers per thread" in occ.title
    old = dataclasses.replace(occ, title="at most 224 registers per thread would fit 9 blocks")
    assert [c.counters for c in contradictions(profile, [old])] == [
        "the kernel uses 190 registers per thread"]


def test_a_shared_memory_lift_names_the_carve_out():
    profile = zoo("zoo_flash_attention")
    [occ] = [f for f in run_rules(profile) if f.rule == "occupancy"
             and f.title.startswith("Theoretical")]
    assert "a carve-out of 195.0 KiB (of the SM's 228.0 KiB)" in occ.title
    assert "at most 43.0 KiB per block within 132.0 KiB" in occ.title
    old = dataclasses.replace(occ, title="at most 75.0 KiB per block would fit 3 blocks")
    assert [c.counters for c in contradictions(profile, [old])] == [
        "the kernel uses 64.0 KiB of shared memory per block"]


# ---------------------------------------------------------------------------------------------
# "The verdict ignores the limit the run measured."


@functools.cache
def reduction() -> dict[str, object]:
    return {p.variant: p for p in collect([ROOT / "reports" / "runs"
                                           / "reduction-h100-2p26"]).pages}


def test_a_kernel_at_its_copy_limit_reads_at_the_limit():
    pages = reduction()
    for variant, pct in (("vectorized", 89.0), ("single_pass", 90.4)):
        page = pages[variant]
        assert f"{page.pct_of_limit:.1f}" == f"{pct}"
        assert page.tldr.startswith("The kernel runs at the limit: ")
        assert page.fix_ideas == []  # nothing left for a fix idea to win
    below = pages["warp_shuffle"]
    assert f"{below.pct_of_limit:.1f}" == "80.5"
    assert "at the limit" not in below.tldr
    assert "It runs at 80.5% of the device copy's bandwidth" in below.tldr
    assert below.fix_ideas
    # the oracle: "at the limit" below 85%, or missing from 85% on, or a fix idea there
    assert page_contradictions(below.profile, "The kernel runs at the limit: ...", 0, 80.5)
    assert page_contradictions(below.profile, "The kernel is memory-bound", 0, 85.0)
    assert page_contradictions(below.profile, "The kernel runs at the limit", 1, 85.0)
    assert page_contradictions(below.profile, "The kernel runs at the limit", 0, 85.0) == []


def test_a_transpose_short_of_the_limit_says_how_far_and_bounds_ncus_estimate(golden):
    pages = {p.variant: p for p in collect([ROOT / "reports" / "runs" / "transpose-h200"]).pages}
    coarsened = pages["coarsened"]
    assert f"{coarsened.pct_of_limit:.1f}" == "84.2"  # below 85%: not at the limit
    assert "at the limit" not in coarsened.tldr and coarsened.fix_ideas
    # ncu's estimate bounded by what the device copy leaves, and how far the kernel is from it
    golden("transpose_coarsened_tldr", coarsened.tldr)
    unbounded = coarsened.tldr.replace("; the device copy leaves at most 15.8% of its time to "
                                       "win", "")
    assert [c.counters for c in page_contradictions(coarsened.profile, unbounded, 1, 84.2)] == [
        "at 84.2% of the practical limit, at most 15.8% is left to win"]


def test_a_compute_bound_kernel_bounds_ncus_estimate_by_its_busiest_pipe():
    # the BF16 chain has no practical limit benched; its cluster kernel is compute-bound on
    # the tensor pipe, so what ncu estimates is held to what that pipe's peak leaves
    from harness.findings import pipe_headroom_pct

    pages = {p.variant: p for p in collect([ROOT / "reports" / "runs" /
                                            "gemm_bf16-h200-4096"]).pages}
    for page in pages.values():
        assert page_contradictions(page.profile, page.tldr, len(page.fix_ideas),
                                   page.pct_of_limit) == [], page.variant
    profile = pages["cluster"].profile
    label, pct, most = pipe_headroom_pct(profile)
    assert label.startswith("Tensor") and 90.0 < pct < 92.0 and 8.0 < most < 11.0
    # an estimate past that, said without the bound, is contradicted; within it, it is not
    said = "The kernel is compute-bound, and the biggest problem is this: x (ncu estimates up to "
    [c] = page_contradictions(profile, said + "30% speedup).", 0, None)
    assert c.counters.endswith(f"leaves at most {most:.0f}% at the same instructions")
    assert page_contradictions(profile, said + f"{most:.0f}% speedup).", 0, None) == []
    # a kernel bound by memory has no pipe bound
    assert pipe_headroom_pct(pages["multistage"].profile) is None


def test_a_faster_iteration_doing_fewer_instructions_is_not_told_bad(golden):
    pages = reduction()
    page, before = pages["grid_stride"], pages["complete_unroll"]
    [change] = [f for f in page.findings if f.rule == "progress" and "throughput" in f.title]
    assert change.kind == "info"
    golden("grid_stride_throughput_change", change.title)
    old = dataclasses.replace(change, kind="bad")
    assert [c.counters for c in contradictions(page.profile, [old], before.profile)] == [
        "the kernel got 1.27x faster with fewer instructions (48,889,856 -> 15,057,056)"]


# ---------------------------------------------------------------------------------------------
# "Fix ideas are generic."


def test_no_shared_memory_advice_without_shared_memory():
    for name in ("zoo_transcendental", "zoo_stream_dram", "zoo_spills"):
        for finding in run_rules(zoo(name)):
            for idea in finding.fixes:
                assert "shared" not in f"{idea.title} {idea.what_if}".lower(), (name, idea)


def test_one_wave_on_a_saturated_pipe_is_not_told_to_use_smaller_blocks():
    # XU at 95.6% over exactly one wave: the gap to theoretical occupancy has no "more, smaller
    # blocks" fix; a launch of 32-thread blocks is not told to make them smaller
    [gap] = [f for f in run_rules(zoo("zoo_transcendental")) if f.rule == "occupancy"]
    assert gap.kind == "bad" and gap.fixes == ()
    small = zoo("zoo_occupancy_blocks")
    for finding in run_rules(small):
        assert not any("smaller blocks" in i.what_if for i in finding.fixes)


def test_no_float4_for_a_gather():
    # sgemm_naive: each lane's load in a sector of its own (84.9% excess): not widened
    [naive, _] = cached_profiles(NAIVE_SMEM_REPORT)
    [vector] = [f for f in run_rules(naive) if f.rule == "vectorization"]
    assert vector.kind == "bad" and vector.fixes == ()
    # the coalesced 32-bit loads of a stream are
    [stream] = [f for f in run_rules(zoo("zoo_stream_dram")) if f.rule == "vectorization"]
    assert [i.rule for i in stream.fixes] == ["wider_global_accesses"]
    assert "bytes per lane of the average global load 4 under 8" in stream.fixes[0].because


def test_no_fusion_advice_where_the_traffic_is_spills():
    # zoo_spills moves 748 MB to DRAM, its spill write-back: the memory fixes do not fit
    profile = zoo("zoo_spills")
    assert profile.metric("dram__bytes_write.sum") == 747899648.0
    [mem] = [f for f in run_rules(profile) if f.rule == "bound"]
    assert mem.metrics["bound"] == "memory" and mem.fixes == ()
    assert [i.rule for i in run_rules(profile)[0].fixes] == ["stop_spills"]


def test_no_register_cap_that_would_spill():
    # 168 -> 80 registers (a WGMMA GEMM) or 255 -> 168 (flash attention): more than a quarter
    # of the registers that hold the kernel's values; 168 -> 128 with no spills fits
    for name in ("zoo_bf16_gemm", "zoo_flash_attention"):
        for finding in run_rules(zoo(name)):
            assert not any(i.rule == "cap_registers" for i in finding.fixes), name
    [occ] = [f for f in run_rules(zoo("zoo_occupancy_registers")) if f.rule == "occupancy"]
    [cap] = occ.fixes
    assert cap.rule == "cap_registers" and "capped at 128" in cap.what_if


# ---------------------------------------------------------------------------------------------
# "The TLDR leads with the tail effect." / "ncu's odd figures."


def test_a_tail_leads_only_where_the_warp_slots_stayed_empty():
    tail = next(f for f in run_rules(zoo("zoo_waves_tail")) if f.rule == "waves")
    assert tail.kind == "bad" and tail.weight == pytest.approx(34.39, abs=0.01)
    # 1.33 waves leave a third of the last wave empty, but 3.1% of the slots stayed empty
    [cheap] = [f for f in run_rules(zoo("zoo_local_array")) if f.rule == "waves"]
    assert cheap.kind == "info" and "only 3.1% of the warp slots stayed empty" in cheap.title
    told = dataclasses.replace(cheap, kind="bad", title="Tail effect: ...")
    assert [c.counters for c in contradictions(zoo("zoo_local_array"), [told])] == [
        "only 3.1% of the warp slots stayed empty"]


def test_an_n_way_figure_no_access_allows_is_quoted_with_its_reason():
    for name, ways, direction in (("zoo_cudnn_attention", "398.4", "store"),
                                  ("zoo_bf16_gemm", "20.4", "store"),
                                  ("zoo_flash_attention", "344.4", "load")):
        [odd] = [f for f in run_rules(zoo(name)) if f.rule == "bank_conflicts"
                 and f.metrics.get("odd_figure")]
        assert odd.title.startswith(f"ncu's {ways}-way figure for shared-memory {direction}s "
                                    "is not read as bank conflicts"), odd.title
        assert odd.kind == "info" and odd.fixes == ()


def test_a_share_over_the_peak_is_no_verdict(golden):
    real = zoo("zoo_stream_l2")
    odd = dataclasses.replace(real, speed_of_light=dataclasses.replace(
        real.speed_of_light, l1_throughput_pct=197.4))
    [quoted] = [f for f in run_rules(odd) if f.rule == "odd_figures"]
    golden("l1_throughput_over_the_peak", quoted.title)
    # the busiest memory unit is the busiest one that can be read
    assert bound.busiest_memory_unit(odd) == bound.busiest_memory_unit(real)
    assert contradictions(odd, run_rules(odd)) == []
    at_edge = dataclasses.replace(odd, speed_of_light=dataclasses.replace(
        real.speed_of_light, l1_throughput_pct=100.0))
    assert not [f for f in run_rules(at_edge) if f.rule == "odd_figures"]


def test_shares_over_the_whole_are_flagged_anywhere():
    profile = zoo("zoo_stream_dram")
    wrong = Finding(rule="bound", kind="bad", title="L1/TEX at 197.4%", text="", section="")
    assert [c.counters for c in contradictions(profile, [wrong])] == [
        "197.4% stated as a share"]


def test_the_opcodes_of_a_class_decide_its_story():
    # with its MUFU opcodes gone from the mix, the MUFU story of the same samples is flagged
    profile = zoo("zoo_transcendental")
    stall = _stall(profile, "mio_throttle")
    without = dataclasses.replace(profile, instruction_mix=tuple(
        o for o in profile.instruction_mix if o.opcode != "MUFU") or (OpcodeCount("FADD", 1, 1),))
    assert [c.counters for c in contradictions(without, [stall])] == [
        "no MUFU instruction executed"]
