"""The zoo (tests/fixtures/zoo): one real H100 report per problem class. Each page's TLDR —
the first thing the page says about the kernel — names that problem, and each finding reads
the real numbers ncu recorded."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from packed_fixtures import cached_profiles, report

from harness.findings import atomics, coalescing, divergence, local_arrays, pipes, run_rules
from harness.pages.writeup import KernelPage, collect
from harness.report.model import KernelReport

# The reports are committed packed with xz (`packed_fixtures`).
ZOO = Path(__file__).parent / "fixtures" / "zoo"

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
        assert report(ZOO / f"{name}.ncu-rep").is_file(), name  # committed as it is or packed
        for suffix in (".raw.csv.gz", ".details.txt.gz"):
            assert (ZOO / f"{name}{suffix}").is_file(), name + suffix


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
    assert pipes.busiest(profile("zoo_fp64"))[0].pipe == "fp64"
    assert pipes.busiest(profile("zoo_transcendental"))[0].pipe == "xu"
    assert pipes.busiest(profile("zoo_tensor_gemm"))[0].pipe.startswith("tensor_op_")
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
