"""Divergence, atomics, local arrays and DRAM-vs-L2 streaming, on the fixture's real numbers
with the thresholds moved to their edges."""

from __future__ import annotations

import dataclasses

from findings_support import naive, smem

from harness.findings import atomics, divergence, local_arrays, memory_level, spills
from harness.report.model import Atomics, Divergence, LocalMemory, SpeedOfLight


def test_fixture_warps_use_all_lanes():
    # ncu: Avg. Active Threads Per Warp 32, Avg. Not Predicated Off Threads Per Warp 31.96
    assert naive().divergence.active_threads_per_warp == 32.0
    assert f"{naive().divergence.working_lanes:.2f}" == "31.96"
    assert divergence.check(naive()) == []


def _lanes(lanes: float, active: float | None = None):
    return dataclasses.replace(naive(), divergence=Divergence(
        active_threads_per_warp=active if active is not None else lanes,
        not_predicated_off_threads_per_warp=lanes, branch_efficiency_pct=50.0))


def test_divergence_edge():
    assert divergence.check(_lanes(divergence.BAD_LANES)) == []
    [finding] = divergence.check(_lanes(divergence.BAD_LANES - 0.01))
    assert finding.kind == "bad" and "divergent branches" in finding.title
    [finding] = divergence.check(_lanes(8.0, active=32.0))
    assert "predicated off" in finding.title


def test_most_lanes_idle_edge():
    assert not divergence.most_lanes_idle(_lanes(divergence.MOST_IDLE_LANES))
    assert divergence.most_lanes_idle(_lanes(divergence.MOST_IDLE_LANES - 0.01))


def test_fixture_kernels_have_no_atomics():
    assert naive().atomics.global_atom_requests == 0.0
    assert atomics.check(naive()) == []


def _atomic(max_pct: float, avg_pct: float):
    return dataclasses.replace(naive(), atomics=Atomics(
        global_atom_requests=0.0, global_red_requests=32768.0,
        l2_atomic_unit_max_pct=max_pct, l2_atomic_unit_avg_pct=avg_pct))


def test_same_address_atomics_edges():
    hot = atomics.HOT_SLICE_PCT
    assert atomics.check(_atomic(hot, hot / atomics.CONCENTRATION))[0].kind == "bad"
    # not hot enough
    assert atomics.check(_atomic(hot - 0.01, 0.1))[0].kind == "info"
    # spread over the slices: the busiest is not far above the average
    assert atomics.check(_atomic(hot, hot / atomics.CONCENTRATION + 0.01))[0].kind == "info"


def _local(loads: float, stores: float, spilled: float):
    return dataclasses.replace(naive(), local_memory=LocalMemory(
        load_instructions=loads, store_instructions=stores, spill_instructions=spilled))


def test_local_arrays_versus_spills():
    [finding] = local_arrays.check(_local(600.0, 400.0, 0.0))
    assert "per-thread array lives in local memory" in finding.title
    # half of the local instructions are spills: still the array's (edge of ARRAY_SHARE)
    assert local_arrays.check(_local(600.0, 400.0, 500.0)) != []
    assert local_arrays.check(_local(600.0, 400.0, 500.01)) == []
    assert spills.check(_local(600.0, 400.0, 500.01))[0].rule == "spills"
    assert local_arrays.check(naive()) == []  # ncu: no local loads or stores


def _memory(dram: float, l2: float):
    sol = dataclasses.replace(naive().speed_of_light, dram_throughput_pct=dram,
                              l2_throughput_pct=l2, memory_throughput_pct=max(dram, l2, 61.0),
                              compute_throughput_pct=10.0)
    return dataclasses.replace(naive(), speed_of_light=sol)


def test_dram_versus_l2_streaming_edges():
    busy = memory_level.BUSY
    assert memory_level.check(_memory(busy, 20.0))[0].metrics["level"] == "DRAM"
    assert memory_level.check(_memory(busy - 0.01, 20.0)) == []
    l2_busy, ratio = memory_level.L2_BUSY, memory_level.L2_OVER_DRAM
    [l2] = memory_level.check(_memory(5.0, l2_busy))
    assert l2.metrics["level"] == "L2" and "stays in L2" in l2.title
    assert memory_level.check(_memory(5.0, l2_busy - 0.01)) == []
    assert memory_level.check(_memory(l2_busy / ratio, l2_busy)) != []
    assert memory_level.check(_memory(l2_busy / ratio + 0.01, l2_busy)) == []


def test_memory_level_only_for_memory_bound_kernels():
    # sgemm_smem is memory-bound through L1 (99%), with L2 and DRAM nearly idle
    assert memory_level.check(smem()) == []
    compute = dataclasses.replace(naive(), speed_of_light=SpeedOfLight(
        compute_throughput_pct=90.0, memory_throughput_pct=70.0, dram_throughput_pct=70.0,
        l2_throughput_pct=10.0))
    assert memory_level.check(compute) == []
