"""The zoo (tests/fixtures/zoo): one real H100 or H200 report per problem class. Each page's
TLDR — the first thing the page says about the kernel — names that problem, and each finding
reads the real numbers ncu recorded."""

from __future__ import annotations

import contextlib
import csv
import functools
from pathlib import Path

import pytest
from packed_fixtures import REDUCTION_RUN, cached_profiles, fixture, report

from harness.findings import (
    atomics,
    bound,
    clusters,
    coalescing,
    divergence,
    feeds,
    imbalance,
    local_arrays,
    occupancy,
    occupancy_limits,
    pipes,
    run_rules,
    synchronization,
    tensor_core,
    warp_primitives,
)
from harness.findings.fixes import fixes_for
from harness.pages.writeup import KernelPage, collect
from harness.report.builder import load_kernel_reports
from harness.report.model import KernelReport

# The reports are committed packed with xz (`packed_fixtures`).
ZOO = Path(__file__).parent / "fixtures" / "zoo"
REDUCTION = REDUCTION_RUN

# program -> words its page's TLDR must hold
PROBLEMS = {
    "zoo_atomic_same": "same-address atomics serialize",
    "zoo_divergence": "only 8.1 of 32 lanes doing work",
    "zoo_fp64": "FP64 pipe",
    "zoo_local_array": "per-thread array lives in local memory",
    "zoo_small_grid": "grid fills only 0.2% of one wave",
    "zoo_smem_occupancy": "limited by shared memory per block",
    "zoo_spills": "registers spill to local memory",
    "zoo_stream_dram": "memory-bound (DRAM)",
    "zoo_stream_l2": "busiest memory unit L2",
    "zoo_tensor_gemm": "Tensor (FP) pipe",
    "zoo_transcendental": "XU",
    "zoo_uncoalesced_store": "global stores are uncoalesced (loads are not)",
    # Hopper-era kernels: judged by the tensor pipe and the path that feeds it
    "zoo_bf16_gemm": "compute-bound (Tensor (FP) pipe at 95.2%, near its peak: WGMMA (HGMMA) "
    "fed by TMA (UTMALDG)); no rule found a clear problem",
    "zoo_fp8_gemm": "compute-bound (Tensor (FP) pipe at 86.7%, near its peak: WGMMA (QGMMA) "
    "fed by TMA (UTMALDG)); no rule found a clear problem",
    "zoo_triton_matmul": "compute-bound (Tensor (FP) pipe at 88.5%, near its peak: WGMMA "
    "(HGMMA) fed by TMA (UTMALDG)); no rule found a clear problem",
    "zoo_cudnn_attention": "compute-bound (Tensor (FP) pipe at 63.2%: WGMMA (HGMMA) fed by TMA",
    "zoo_flash_attention": "latency-bound (busiest pipe Tensor (FP) at 52.3%), and the biggest "
    "problem is this: theoretical occupancy is only 12.5%, limited by registers per thread and "
    "shared memory per block",
    "zoo_compiled_fused": "compute-bound (FMA pipe at 46.7%), and the biggest problem is this: "
    "warps stall on long scoreboard",
    "zoo_tma_copy": "memory-bound (L2, loads by TMA (UTMALDG))",
    "zoo_cluster_dsmem": "distributed shared memory traffic dominates: 17,301,504 requests",
    "zoo_cluster_sync": "cluster barriers dominate: UCGABAR_ARV/UCGABAR_WAIT/MEMBAR",
    # warp primitives, atomics and synchronization that dominate a kernel
    "zoo_warp_shuffle": "warp shuffles dominate: SHFL is 42.4% of executed instructions",
    "zoo_warp_vote": "warp votes dominate: VOTE is 17.6% of executed instructions",
    "zoo_atomic_shared": "shared-memory atomics dominate: ATOMS is 20.2%",
    "zoo_atomic_scattered": "scattered global atomics dominate",
    "zoo_barrier": "block barriers dominate: BAR is 38.3% of executed instructions",
    "zoo_polling": "a polling loop dominates: warps spin on volatile loads",
    # launch limits, each named by its cause and the number that lifts it
    "zoo_occupancy_blocks": "limited by the SM's block limit (32 blocks per SM): 32-thread "
    "blocks hit the SM's limit of 32 blocks at 32 of 64 warps; 64-thread blocks would allow 64 "
    "warps",
    "zoo_occupancy_registers": "limited by registers per thread (1 block per SM): 168 registers "
    "per thread allow 1 block of 8 warps per SM; at most 128 registers per thread "
    "(__launch_bounds__(256, 2) in CUDA C++, maxnreg=128 in Triton) would fit 2 blocks, 16 "
    "warps",
    "zoo_occupancy_warps": "compute-bound (FMA pipe at 71.9%)",
    # the last wave holds a quarter of a wave's blocks: the SMs stay busy (99.0% of the time)
    # but 34.4% of their warp slots stay empty, the cost the counters measure
    "zoo_waves_tail": "tail effect: 1.25 waves, the partial last wave (25.0% full) leaves warp "
    "slots empty: 34.4% of them stayed empty",
    "zoo_imbalance": "work is unbalanced across SMs: the busiest SM was active 13.6× as many "
    "cycles as the average SM, so for about 92.5% of the kernel one SM ran alone",
    # recorded on an H200: constant, special-function and launch-shape cases, library kernels,
    # each named by the instructions that carry it
    "zoo_const_indexed": "the ADU pipe binds the kernel: 71.9% of its peak, busy with constant "
    "loads (LDC, 79.7% of its instructions) and branches (BRA, 20.3%)",
    "zoo_mufu_chain": "the XU pipe binds the kernel: 94.7% of its peak, busy with special math "
    "(MUFU, 100.0% of its instructions)",
    "zoo_tiny_blocks": "8-thread blocks hit the SM's limit of 32 blocks at 32 of 64 warps",
    "zoo_one_block": "the grid fills only under 0.1% of one wave: SMs sit idle",
    "zoo_gather": "global loads are uncoalesced (stores are not): 70.0% of the sectors moved are "
    "excess",
    "zoo_wide_loads": "memory-bound (L2)",
    "zoo_smem_histogram": "the grid fills only 50.0% of one wave: every SM has a block, but warps "
    "fill only 49.2% of its warp slots",
    "zoo_sort_network": "shared-memory loads hit bank conflicts: 41.7% of the LDS wavefronts, "
    "at `LDS` at zoo_sort_network.py:20 (80 instructions, 2.00x",
    "zoo_skinny_gemm": "the grid fills only 24.2% of one wave: every SM has a block, but warps "
    "fill only 6.1% of its warp slots",
    "zoo_cufft": "shared-memory stores hit bank conflicts: 33.3% of the STS wavefronts, at "
    "`STS` (32 instructions, 2.00x their ideal wavefronts)",
    "zoo_cusparse_spmv": "warps stall on MIO throttle: 12.9 of every 46.8 cycles between two "
    "instructions (27.7%), at global memory (LDG/STG): 68.1% of its samples",
    "zoo_conv_fp16": "compute-bound (Tensor (FP) pipe at 96.0%, near its peak: WGMMA (HGMMA) fed "
    "by TMA (UTMALDG)); no rule found a clear problem",
}


@functools.cache
def page(name: str) -> KernelPage:
    [only] = collect([report(ZOO / f"{name}.ncu-rep")]).pages
    return only


@functools.cache
def profile(name: str) -> KernelReport:
    [only] = cached_profiles(report(ZOO / f"{name}.ncu-rep"))
    return only


def test_every_zoo_program_has_its_report():
    programs = sorted(p.stem for p in ZOO.glob("zoo_*.py"))
    assert programs == sorted(PROBLEMS)
    for name in programs:
        for suffix in (".ncu-rep", ".raw.csv", ".details.txt"):  # committed packed
            assert fixture(ZOO / f"{name}{suffix}").is_file(), name + suffix


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_zoo_page_names_its_problem_first(name):
    assert PROBLEMS[name] in page(name).tldr, page(name).tldr


def test_divergence_qualifies_the_compute_praise():
    # FMA pipe at 81.6% and the SM 'near saturation' — with 8.1 working lanes of 32
    found = run_rules(profile("zoo_divergence"))
    assert not any(f.rule == "bound" and f.kind == "good" for f in found)
    [bound] = [f for f in found if f.rule == "bound"]
    assert bound.kind == "info" and "but only 8.1 of 32 lanes" in bound.title
    [div] = divergence.check(profile("zoo_divergence"))
    assert f"{profile('zoo_divergence').divergence.active_threads_per_warp:.2f}" == "8.11"
    assert div.speedup_pct is None  # run_rules adds ncu's ThreadDivergence estimate
    assert [f.speedup_pct for f in found if f.rule == "divergence"] == [pytest.approx(65.6, 0.01)]


def test_same_address_atomics_on_real_counters():
    p = profile("zoo_atomic_same")
    # one float, 1,048,576 adds: RED requests per warp, all in one L2 slice
    assert p.atomics.global_red_requests == 32768
    assert p.atomics.l2_red_sectors == 1048576
    assert atomics.serializes(p)
    assert atomics.executed_atomics(p) == {"REDG": 32768.0}  # Hopper: RED on global memory


def test_pipes_name_the_right_unit():
    assert pipes.busiest_pipes(profile("zoo_fp64"))[0].pipe == "fp64"
    assert pipes.busiest_pipes(profile("zoo_transcendental"))[0].pipe == "xu"
    assert pipes.busiest_pipes(profile("zoo_tensor_gemm"))[0].pipe.startswith("tensor_op_")
    assert pipes.expected_pipe(profile("zoo_tensor_gemm")) == "tensor"
    # the tensor GEMM sits on the pipe it should: no "off its pipe" finding
    assert all("GEMM-like" not in f.title for f in pipes.check(profile("zoo_tensor_gemm")))
    classes = {c.name for c in profile("zoo_tensor_gemm").instruction_classes}
    assert "tensor" in classes


def test_spills_versus_local_arrays():
    spills, arrays = profile("zoo_spills"), profile("zoo_local_array")
    assert spills.local_memory.spill_instructions == spills.local_memory.instructions
    assert local_arrays.check(spills) == []
    assert arrays.local_memory.spill_instructions == 0
    assert local_arrays.array_instructions(arrays) == 4460544


def test_uncoalesced_stores_only():
    split = profile("zoo_uncoalesced_store").coalescing.directions()
    assert split["loads"].excess_pct == 0 and (split["stores"].excess_pct or 0) > 80
    [finding] = coalescing.check(profile("zoo_uncoalesced_store"))
    assert finding.title.startswith("Global stores are uncoalesced (loads are not)")


def test_streaming_level():
    dram = [f for f in run_rules(profile("zoo_stream_dram")) if f.rule == "memory_level"]
    l2 = [f for f in run_rules(profile("zoo_stream_l2")) if f.rule == "memory_level"]
    assert dram[0].metrics["level"] == "DRAM" and l2[0].metrics["level"] == "L2"


def raw(name: str) -> dict[str, float]:
    """ncu's own `--page raw --csv` of a zoo report: metric -> value (the truth)."""
    with fixture(ZOO / f"{name}.raw.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))
    out = {}
    for key, value in zip(rows[0], rows[2], strict=True):
        with contextlib.suppress(ValueError):  # strings: names, "no data"
            out[key] = float(value.replace(",", ""))
    return out


def test_hopper_gemms_are_judged_by_the_tensor_pipe():
    # cuBLAS BF16 at 95.2% of its tensor pipe: compute-bound, near its peak, no problem left
    gemm = profile("zoo_bf16_gemm")
    assert raw("zoo_bf16_gemm")["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] \
        == pytest.approx(95.222735)
    use = tensor_core.tensor_use(gemm)
    assert use is not None and use.wgmma and use.warp_specialized  # HGMMA, USETMAXREG
    assert use.pipe_pct == pytest.approx(95.2227, abs=1e-3)
    assert use.main_feed == ("TMA (UTMALDG)",)
    tma_sectors = "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum"
    assert use.feed["TMA (UTMALDG)"] == 32 * raw("zoo_bf16_gemm")[tma_sectors] == 1610612736
    assert bound.classify_bound(gemm) == "compute"
    found = run_rules(gemm)
    assert [f for f in found if f.kind == "bad"] == []
    [occ] = [f for f in found if f.rule == "occupancy" and f.title.startswith("Theoretical")]
    assert occ.kind == "info" and "by design" in occ.title and "18.8%" in occ.title
    assert occ.fixes == ()  # design has no fix idea
    # on its own the rule states the lift, but no register cap fits: 168 -> 80 registers is
    # more than a quarter of them, and shared memory binds as well
    [alone] = [f for f in occupancy.check(gemm) if f.title.startswith("Theoretical")]
    assert alone.kind == "bad" and "at most 80 registers per thread" in alone.title
    assert fixes_for(gemm, alone) == ()
    assert occupancy_limits.binding(gemm).resource == "registers"
    [gap] = [f for f in found if f.rule == "occupancy" and f.title.startswith("Achieved")]
    assert "at most 4.8% to win: the tensor pipe is at 95.2% of its peak" in gap.title
    assert "memory-bound" not in page("zoo_bf16_gemm").tldr
    assert "occupancy" not in page("zoo_bf16_gemm").tldr
    # near the peak from 80% on: FP8 at 86.7% is; cuDNN attention at 63.2% is not
    assert tensor_core.near_peak(profile("zoo_fp8_gemm")) == pytest.approx(86.6893, abs=1e-3)
    assert tensor_core.near_peak(profile("zoo_cudnn_attention")) is None
    assert tensor_core.NEAR_PEAK == 80.0


def test_tensor_pipe_sets_the_bound_where_sm_throughput_reads_low():
    # cuDNN attention: SM throughput 54.0% (< 60) but its tensor pipe runs at 63.2%
    attention = profile("zoo_cudnn_attention")
    assert attention.speed_of_light.compute_throughput_pct < bound.LATENCY_THRESHOLD
    assert bound.classify_bound(attention) == "compute"
    # flash attention (mma.sync) at 52.3% with memory at 44.5%: latency-bound
    assert bound.classify_bound(profile("zoo_flash_attention")) == "latency"
    [finding] = tensor_core.check(profile("zoo_flash_attention"))
    assert finding.kind == "info" and "mma.sync (HMMA), fed by cp.async (LDGSTS)" in finding.title


def test_low_occupancy_is_design_only_for_wgmma_kernels(golden):
    wgmma = [f for f in run_rules(profile("zoo_cudnn_attention")) if f.rule == "occupancy"
             and f.title.startswith("Theoretical")]
    assert [f.kind for f in wgmma] == ["info"] and "by design: a WGMMA kernel" in wgmma[0].title
    # flash attention's mma.sync kernel: the same 12.5% stays a problem, with both causes
    [sync] = [f for f in run_rules(profile("zoo_flash_attention")) if f.rule == "occupancy"
              and f.title.startswith("Theoretical")]
    assert sync.kind == "bad"
    assert "only together: at most 168 registers per thread" in sync.title
    # its 64 KiB blocks ran under a 132 KiB carve-out: 3 fit a 195 KiB one, of the SM's 228
    golden("flash_attention_occupancy", sync.title)


def test_tma_copy_is_memory_bound_through_tma():
    copy = profile("zoo_tma_copy")
    tma_sectors = raw("zoo_tma_copy")["l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum"]
    assert feeds.load_bytes(copy) == {"TMA (UTMALDG)": 32 * tma_sectors}
    assert feeds.async_share(copy) == 1.0
    assert bound.describe_bound(copy) == "memory-bound (L2, loads by TMA (UTMALDG))"
    # a kernel whose loads are plain LDGs says nothing of a feed
    assert bound.describe_bound(profile("zoo_stream_dram")) == "memory-bound (DRAM)"


def test_distributed_shared_memory_is_named():
    dsmem = profile("zoo_cluster_dsmem")
    requests = raw("zoo_cluster_dsmem")["l1tex__t_requests_pipe_lsu_mem_dshared_op_ld.sum"]
    assert clusters.dsmem(dsmem) == {"ld": (requests, 84344832.0)}
    [finding] = clusters.check(dsmem)
    assert finding.kind == "bad" and finding.metrics["share_pct"] == pytest.approx(13.75, abs=0.01)
    # the long-scoreboard stalls are its symptom: the DSMEM finding carries their estimate
    [top] = [f for f in run_rules(dsmem) if f.rule == "clusters"]
    assert top.speedup_pct is not None
    # remote stores at 6.5% of instructions (< 10%): clusters named, not called a problem
    [sync] = clusters.check(profile("zoo_cluster_sync"))
    assert sync.kind == "info" and "264 clusters of 4 blocks (4x1x1)" in sync.title
    assert clusters.check(profile("zoo_stream_dram")) == []  # no clusters at all


def test_warp_primitives_dominate_or_not():
    assert warp_primitives.dominant(profile("zoo_warp_shuffle"))[::2] == ("SHFL", pytest.approx(
        42.36, abs=0.01))
    assert warp_primitives.dominant(profile("zoo_warp_vote"))[::2] == ("VOTE", pytest.approx(
        17.59, abs=0.01))
    # the shuffles explain the LSU pipe at 98.9%: the pipe finding steps aside
    [pipe] = [f for f in run_rules(profile("zoo_warp_shuffle")) if f.rule == "pipes"]
    assert pipe.kind == "info" and "warp shuffles dominate, which keeps it busy" in pipe.title
    # the cuBLAS GEMM's uniform votes (VOTEU) are not warp votes
    assert warp_primitives.check(profile("zoo_bf16_gemm")) == []
    # the reduction's last-warp shuffles: 8.1% of instructions, below the 15% that dominates
    passes = load_kernel_reports(report(REDUCTION / "warp_shuffle_67108864.ncu-rep"))
    assert {f"{s:.1f}" for p in passes for _, s in warp_primitives.shares(p).values()} == {
        "8.1", "0.3"}
    assert all(warp_primitives.check(p) == [] for p in passes)


def test_synchronization_kinds():
    [barrier] = synchronization.check(profile("zoo_barrier"))
    assert barrier.metrics["kind"] == "Block barriers"
    assert barrier.metrics["share_pct"] == pytest.approx(38.3, abs=0.05)
    [cluster] = synchronization.check(profile("zoo_cluster_sync"))
    assert cluster.metrics["kind"] == "Cluster barriers"
    assert cluster.metrics["waiting_pct"] == pytest.approx(91.6, abs=0.05)  # membar + barrier
    [polling] = synchronization.check(profile("zoo_polling"))
    assert synchronization.strong_loads(profile("zoo_polling")) == 2847664
    assert polling.metrics["kind"] == "polling"
    # a streaming kernel: no barrier, no spin
    assert synchronization.check(profile("zoo_stream_dram")) == []
    # cuDNN attention waits at barriers (31.7%) but BAR is 0.7% of its instructions: not named;
    # the BF16 GEMM's BAR at 1.5% is (an aside there: its tensor pipe is near its peak)
    assert synchronization.check(profile("zoo_cudnn_attention")) == []
    [gemm] = synchronization.check(profile("zoo_bf16_gemm"))
    assert gemm.metrics["share_pct"] == pytest.approx(1.5, abs=0.05)
    assert gemm.metrics["share_pct"] >= synchronization.MIN_SHARE


def test_atomics_by_space_and_spread():
    [shared] = atomics.check(profile("zoo_atomic_shared"))
    assert shared.kind == "bad" and shared.metrics["space"] == "shared"
    [scattered] = atomics.check(profile("zoo_atomic_scattered"))
    r = raw("zoo_atomic_scattered")
    per = (r["l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum"]
           / r["l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"])
    assert scattered.metrics["sectors_per_request"] == per == 32.0
    assert not atomics.serializes(profile("zoo_atomic_scattered"))
    # one address: still the serialization finding, not "scattered"
    [same] = atomics.check(profile("zoo_atomic_same"))
    assert same.title.startswith("Same-address atomics serialize")


def test_occupancy_names_the_cause_the_user_can_change():
    blocks = profile("zoo_occupancy_blocks")
    # ncu's limits tie at 32 blocks for shared memory, blocks and barriers; the kernel uses
    # neither shared memory nor barriers, so the block size is the cause
    assert blocks.occupancy.limiters == ("shared_mem", "blocks", "barriers")
    assert occupancy_limits.causes(blocks) == ("blocks",)
    assert "shared memory" not in page("zoo_occupancy_blocks").tldr
    regs = occupancy_limits.binding(profile("zoo_occupancy_registers"))
    assert regs.resource == "registers" and "at most 128 registers" in regs.lift
    smem = occupancy_limits.binding(profile("zoo_smem_occupancy"))
    assert smem.lift == "at most 37.0 KiB per block would fit 6 blocks, 24 warps"
    warps = occupancy_limits.binding(profile("zoo_occupancy_warps"))
    assert warps.cause == "768-thread blocks (24 warps) fit 2 per SM: 48 of 64 warps"
    assert warps.lift == "a block of 1024 threads would fill all 64 warps"
    # 75% is not low enough to be a problem, but the page names the limit and its lift
    [occ] = [f for f in run_rules(profile("zoo_occupancy_warps")) if f.rule == "occupancy"]
    assert occ.kind == "info" and warps.lift in occ.title


def test_imbalance_against_ncu_counters():
    r = raw("zoo_imbalance")
    b = imbalance.balance(profile("zoo_imbalance"))
    # the raw page rounds the average to six decimals
    assert b.ratio == pytest.approx(r["sm__cycles_active.max"] / r["sm__cycles_active.avg"], 1e-9)
    others = (r["sm__cycles_active.sum"] - r["sm__cycles_active.max"]) / 131
    assert b.alone_pct == pytest.approx(
        100 * (r["sm__cycles_active.max"] - others) / r["sm__cycles_elapsed.max"])
    [finding] = [f for f in run_rules(profile("zoo_imbalance")) if f.rule == "imbalance"]
    assert finding.kind == "bad"
    # the achieved-occupancy gap is its symptom
    [gap] = [f for f in run_rules(profile("zoo_imbalance")) if f.rule == "occupancy"]
    assert gap.kind == "info" and "unequal work" in gap.title
    # balanced SMs (the tail kernel: 1.00x) and a grid smaller than the GPU: not judged here
    assert imbalance.balance(profile("zoo_waves_tail")).ratio == pytest.approx(1.0, abs=0.01)
    assert imbalance.check(profile("zoo_waves_tail")) == []
    assert imbalance.balance(profile("zoo_small_grid")) is None


# ---------------------------------------------------------------------------------------------
# the kinds the first zoo lacked: what each page says, and the fix ideas it does not give


def _stall(name: str, reason: str):
    return next(f for f in run_rules(profile(name))
                if f.rule == "stalls" and f.metrics["reason"] == reason)


def _fix_rules(name: str) -> set[str]:
    return {i.rule for f in run_rules(profile(name)) for i in f.fixes}


def test_indexed_constant_reads_are_told_as_such():
    # no shared memory: the MIO queue holds LDC indexed by each lane, the ADU issues them
    p = profile("zoo_const_indexed")
    assert not any(o.opcode in ("LDS", "STS") for o in p.instruction_mix)
    stall = _stall("zoo_const_indexed", "mio_throttle")
    assert stall.metrics["carrier"] == "constant"
    assert stall.title.endswith("at constant loads (LDC): 100.0% of its samples, indexed by "
                                "register.")
    assert "c[0x3][" in stall.text  # the table's loads, as ncu disassembled them
    assert [i.rule for i in stall.fixes] == ["table_out_of_constant_memory"]
    assert "barrier" not in page("zoo_const_indexed").tldr
    assert not {"wider_shared_accesses", "load_shared_ahead"} & _fix_rules("zoo_const_indexed")


def test_a_mufu_chain_is_told_by_its_mufu():
    stall = _stall("zoo_mufu_chain", "mio_throttle")
    assert stall.metrics["carrier"] == "mufu" and "special math (MUFU)" in stall.title
    assert "fewer_transcendentals" in _fix_rules("zoo_mufu_chain")
    assert not any("shared" in i.what_if.lower() for f in run_rules(profile("zoo_mufu_chain"))
                   for i in f.fixes)


def test_tiny_blocks_are_the_block_size_not_divergence():
    [lanes] = [f for f in run_rules(profile("zoo_tiny_blocks")) if f.rule == "divergence"]
    assert lanes.metrics["cause"] == "block_size"
    assert "the 8-thread blocks fill only 8.0 lanes of each warp" in lanes.title
    assert [i.rule for i in lanes.fixes] == ["full_warps"]
    assert "divergent branches" not in lanes.title


def test_one_warp_is_not_told_to_use_smaller_or_64_thread_blocks(golden):
    found = run_rules(profile("zoo_one_block"))
    assert profile("zoo_one_block").launch.grid_size == 1
    assert profile("zoo_one_block").launch.block_size == 32
    occupancy_findings = [f for f in found if f.rule == "occupancy"]
    assert occupancy_findings and all(f.kind == "info" and f.fixes == ()
                                      for f in occupancy_findings)
    ideas = [i for f in found for i in f.fixes]
    assert not any("smaller" in i.what_if or "64-thread" in i.what_if for i in ideas)
    [grid] = [f for f in found if f.rule == "waves"]
    assert [i.rule for i in grid.fixes] == ["fill_the_gpu"]
    golden("one_warp_fill_the_gpu", grid.fixes[0].what_if)


def test_a_stride_gather_gets_no_float4():
    [vector] = [f for f in run_rules(profile("zoo_gather")) if f.rule == "vectorization"]
    assert vector.kind == "bad" and vector.fixes == ()
    assert "wider_global_accesses" not in _fix_rules("zoo_gather")
    assert "coalesce" in _fix_rules("zoo_gather")


def test_loads_already_64_bit_get_no_float4():
    p = profile("zoo_wide_loads")
    assert p.coalescing.loads.lane_bytes == 8.0
    assert "wider_global_accesses" not in _fix_rules("zoo_wide_loads")
    assert any(f.rule == "vectorization" and f.kind == "good" for f in run_rules(p))


def test_a_shared_histogram_counts_in_registers():
    assert {"count_in_registers", "fill_the_gpu"} <= _fix_rules("zoo_smem_histogram")
    [atomic] = [f for f in run_rules(profile("zoo_smem_histogram")) if f.rule == "atomics"]
    assert atomic.title.startswith("Shared-memory atomics dominate: ATOMS is 19.6%")


def test_a_sorting_network_is_told_by_its_shared_memory_and_barriers():
    ideas = _fix_rules("zoo_sort_network")
    assert {"pad_or_swizzle", "synchronize_less"} <= ideas
    conflicts = [f for f in run_rules(profile("zoo_sort_network")) if f.rule == "bank_conflicts"]
    # loads and stores each get their own padding idea
    assert [i.title for f in conflicts for i in f.fixes] == [
        "Eliminate bank conflicts on shared loads.", "Eliminate bank conflicts on shared stores."]
    assert _stall("zoo_sort_network", "barrier").metrics["carrier"] == "block_barrier"


def test_a_skinny_gemm_that_reads_each_byte_once_gets_no_larger_tiles():
    from harness.findings import evidence

    p = profile("zoo_skinny_gemm")
    assert evidence.read(p, "l2_reads_per_dram_read") == pytest.approx(1.13, abs=0.01)
    assert not {"larger_tiles", "reuse_from_registers", "stage_in_shared_memory",
                "cap_registers"} & _fix_rules("zoo_skinny_gemm")
    # its 121-register limit on occupancy cannot bind a grid of a quarter of a wave
    [occ] = [f for f in run_rules(p) if f.rule == "occupancy"
             and f.title.startswith("Theoretical")]
    assert occ.kind == "info" and "the grid fills less than one wave" in occ.title


def test_no_register_cap_for_an_fft():
    # cuFFT's 48 registers limit occupancy to 62.5%: no cap is proposed for it
    assert "cap_registers" not in _fix_rules("zoo_cufft")
    [occ] = [f for f in run_rules(profile("zoo_cufft")) if f.rule == "occupancy"]
    assert occ.kind == "info"


def test_spmv_stalls_are_told_by_their_loads():
    stall = _stall("zoo_cusparse_spmv", "mio_throttle")
    assert stall.metrics["carrier"] == "global"
    assert "LDG.E" in stall.text


def test_a_wgmma_convolution_waits_on_its_mbarriers_and_warpgroup_mmas():
    from harness.report import math_rates, sites_by_reason

    p = profile("zoo_conv_fp16")
    barrier = sites_by_reason(p)["barrier"]
    # 99.8% of its barrier samples on an mbarrier try-wait or a WGMMA wait, none at __syncthreads
    assert barrier.share("mbarrier") + barrier.share("wgmma") > 99.0
    assert barrier.share("block_barrier") == 0.0
    [tensor] = [r for r in math_rates(p) if r.unit == "tensor"]
    assert tensor.words == "FP16 (tensor cores) 643.4 TFLOP/s"
    [mix] = [f for f in run_rules(p) if f.rule == "instruction_mix"]
    assert "overhead" not in mix.text and "FP16 MMAs" in mix.title


def test_predicated_cluster_instructions_are_named_by_their_opcode():
    # an elected thread's multicast copy and a cluster-address arrival are often predicated
    from findings_support import synthetic

    from harness.report.model import SassInstruction

    profile = synthetic(sass=(
        SassInstruction(0x10, "@P0 UTMALDG.2D.MULTICAST [UR8], [UR4], UR10", 512.0, "k.cu:9"),
        SassInstruction(0x20, "@!P0 SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [UR5], RZ", 256.0),
        SassInstruction(0x30, "UTMALDG.2D [UR8], [UR4]", 512.0, "k.cu:8")))
    named = clusters.cluster_instructions(profile)
    assert named["multicast TMA copies"] == "512 executed (`UTMALDG.2D.MULTICAST` at k.cu:9)"
    assert named["mbarrier arrivals through a cluster address"] == (
        "256 executed (`SYNCS.ARRIVE.TRANS64.RED.A1T0`)")
    assert "cluster barriers" not in named
