"""Uncoalesced global access: excess sectors, from metrics both `pages` and `full` collect."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FIXTURES
from findings_support import naive, prose, smem, synthetic
from packed_fixtures import cached_profiles, report

from harness.findings import bank_conflicts, coalescing
from harness.findings.fixes import fixes_for
from harness.report.model import AsyncCopies, Coalescing, GlobalAccesses


def test_naive_fixture_uncoalesced_as_ncus_rule_counts_it(golden):
    # ncu's UncoalescedGlobalAccess (Source Counters, instruction by instruction): "a total of
    # 941359104 excessive sectors (85% of the total 1109393408 sectors)". The counters (ncu's
    # raw page beside the report): 1108344832 load sectors and 1049835 store sectors, 4.0 bytes
    # of each used, 67141632 and 32768 warp instructions of 4-byte lanes: the broadcast load of
    # B needs one sector, the scattered load of A four, of the 33 each pair of loads moves.
    [finding] = coalescing.check(naive())
    assert finding.kind == "bad"
    assert finding.metrics["sectors"] == 1108344832 + 1049835
    assert finding.metrics["excessive_sectors"] == pytest.approx(941359104, rel=2e-6)
    assert round(finding.metrics["excess_pct"]) == 85
    # however the lanes were spread, at least 81.6% of the sectors were excess
    assert finding.metrics["least_excess_pct"] == pytest.approx(81.64, abs=0.01)
    assert finding.metrics["direction"] == "loads and stores"
    golden("naive", prose([finding]))  # 941,360,206 excess; loads 84.9%, stores 87.5%


def test_smem_fixture_is_coalesced(golden):
    [finding] = coalescing.check(smem())
    assert finding.kind == "good" and finding.metrics["excess_pct"] == 0.0
    golden("smem", prose([finding]))


def _lanes(sectors: float, bytes_per_sector: float, instructions: float,
           width: float = 4.0, narrowest: float | None = None) -> GlobalAccesses:
    return GlobalAccesses(sectors, bytes_per_sector, instructions, lane_bytes=width,
                          narrowest_lane_bytes=narrowest or width)


def _global(loads: GlobalAccesses, stores: GlobalAccesses | None = None) -> Coalescing:
    return Coalescing(loads=loads, stores=stores or GlobalAccesses())


def _kinds(coalescing_record: Coalescing) -> list[str]:
    return [f.kind for f in coalescing.check(synthetic(coalescing=coalescing_record))]


def test_a_broadcast_beside_a_coalesced_load_is_coalesced():
    # the chain's `coalesced` kernel: per step one warp reads one word of A (all lanes, one
    # address: one sector) and 32 words of B (four sectors); 132 bytes in five sectors
    loads = _lanes(5000.0, 132 / 5, 2000.0)
    assert loads.ideal_sectors == pytest.approx(5000.0) and loads.excess_pct == 0.0
    # (the bytes over 32 alone, 4125 sectors, would have read 17.5% of the 5000 excess)
    assert _kinds(_global(loads)) == ["good"]


def test_warps_of_a_few_lanes_are_never_called_uncoalesced():
    # 25 lanes of 4 contiguous bytes: 100 bytes in 4 sectors, which is their ideal. The
    # estimate takes the 7 idle lanes' shortfall for single-lane instructions (16.9%), but
    # the most the ideal could be (one more sector per instruction) explains it all: no verdict
    partial = _lanes(4000.0, 25.0, 1000.0)
    assert partial.excess_pct == pytest.approx(16.9, abs=0.1)
    assert partial.least_excess_pct == 0.0
    assert _kinds(_global(partial)) == []
    # one lane of each warp, 4 bytes in its sector: nothing to coalesce either way
    single = _lanes(100.0, 4.0, 100.0)
    assert single.excess_pct == 0.0 and _kinds(_global(single)) == ["good"]
    # the same stores at two sectors each: half of them excess (the estimate), and at least
    # 45.3% however the lanes were spread (the generous ideal: 12.5 sectors asked plus 31/32
    # of a sector for each of the 100 instructions)
    two = _lanes(200.0, 2.0, 100.0)
    assert two.excess_pct == pytest.approx(50.0)
    assert two.least_excess_pct == pytest.approx(100 * (200 - 12.5 - 96.875) / 200)


def test_the_narrowest_width_bounds_the_deficient_instructions():
    # 128-bit loads of full warps beside 32-bit broadcasts (one in five): the average width
    # (13.6 B) would allow fewer deficient instructions than there were; the narrowest (4 B)
    # does not, so the bound stays generous enough to say nothing bad
    loads = _lanes(4 * 16 + 1, (4 * 512 + 4) / 65, 5, width=(4 * 16 + 4) / 5, narrowest=4.0)
    assert loads.least_excess_pct == 0.0 and _kinds(_global(loads)) != ["bad"]


def test_the_bad_direction_is_named_on_both_sides_of_the_threshold():
    # stores at 4 of 32 bytes per sector, each lane its own sector: 112 of their 128 sectors
    # excess; loads clean: 112 of 1028 sectors, 10.9%
    stores = _lanes(128.0, 4.0, 4.0)
    [finding] = coalescing.check(synthetic(coalescing=_global(_lanes(900.0, 32.0, 225.0),
                                                              stores)))
    assert finding.title.startswith("Global stores are uncoalesced (loads are not): 10.9%")
    [idea] = fixes_for(synthetic(coalescing=_global(_lanes(900.0, 32.0, 225.0), stores)),
                       finding)
    assert finding.metrics["direction"] == "stores" and "wrote consecutive" in idea.what_if
    # the same excess spread over more load sectors, 112 of 1152, 9.7%: no longer a problem
    assert _kinds(_global(_lanes(1024.0, 32.0, 256.0), stores)) == []
    # loads alone, two lanes' words in each 32-byte sector: 8 of 32 bytes used; no stores at
    # all, so no "(stores are not)"
    [finding] = coalescing.check(synthetic(coalescing=_global(_lanes(128.0, 8.0, 8.0))))
    assert finding.title.startswith("Global loads are uncoalesced: 75.0%")
    [idea] = fixes_for(synthetic(coalescing=_global(_lanes(128.0, 8.0, 8.0))), finding)
    assert "read consecutive" in idea.what_if


def test_clean_threshold_both_sides():
    # 99 of 10000 sectors excess (0.99%) count as coalesced, 100 (1.00%) do not
    def loads(excess: int) -> Coalescing:  # every lane a word of its own
        asked = 10000 - excess
        return _global(_lanes(10000.0, 32.0 * asked / 10000, asked / 4))

    assert _kinds(loads(99)) == ["good"]
    assert _kinds(loads(100)) == []


def test_cp_async_loads_without_their_sectors_are_not_judged_and_the_page_says_so(golden):
    # an async-copy kernel recorded before `pages` collected cp.async's sectors: only its
    # stores are judged; the LDG loads' sectors would hold the cp.async loads' too
    profile = synthetic(coalescing=Coalescing(
        loads=_lanes(1000.0, 32.0, 250.0), stores=_lanes(4096.0, 32.0, 1024.0),
        async_copies=AsyncCopies(sectors=None, instructions=65536.0, lane_bytes=16.0)))
    [finding] = coalescing.check(profile)
    assert finding.kind == "good"
    golden("cp_async_not_collected", prose([finding]))  # both named as not judged


def _async(sectors: float, instructions: float = 1000.0, width: float = 16.0) -> Coalescing:
    return Coalescing(loads=_lanes(sectors, 32.0, instructions), stores=_lanes(640.0, 32.0, 160.0),
                      async_copies=AsyncCopies(sectors, instructions, lane_bytes=width))


def test_cp_async_loads_are_bounded_from_below_and_never_called_coalesced(golden):
    # 1000 cp.async of 16-byte lanes: full warps need 16 sectors each, 16000 in all
    record = _async(16000.0)
    assert record.async_copies.most_ideal_sectors == 16000.0
    assert record.async_copies.excess_pct == 0.0 and record.global_excess_pct == 0.0
    # no excess beyond the bound, yet idle or sharing lanes could hide some: no verdict
    assert _kinds(record) == []
    # beside the 640 clean store sectors: 1848 sectors beyond the bound are 9.995% of all
    # (no verdict), 1849 are 10.0005% (uncoalesced)
    assert _kinds(_async(16000.0 + 1848)) == []
    [finding] = coalescing.check(synthetic(coalescing=_async(16000.0 + 1849)))
    assert finding.kind == "bad"
    assert finding.metrics["direction"] == "cp.async loads"
    assert finding.metrics["excess_pct"] == pytest.approx(100 * 1849 / 18489)
    golden("cp_async_at_the_threshold", prose([finding]))  # at least 10.0% of sectors excess


def test_stores_worse_than_cp_async_loads_never_make_those_coalesced(golden):
    # stores at 4 of 32 bytes per sector (112 of 128 sectors excess) beside cp.async loads at
    # their bound: the stores are named, the cp.async loads are not called coalesced
    record = Coalescing(loads=_lanes(100.0, 32.0, 25.0), stores=_lanes(128.0, 4.0, 4.0),
                        async_copies=AsyncCopies(16.0, 1.0, lane_bytes=16.0))
    [finding] = coalescing.check(synthetic(coalescing=record))
    assert finding.metrics["direction"] == "stores"
    golden("stores_worse_than_cp_async", prose([finding]))
    # both uncoalesced: the advice speaks of copies and writes
    record = dataclasses.replace(record, async_copies=AsyncCopies(32.0, 1.0, lane_bytes=16.0))
    [finding] = coalescing.check(synthetic(coalescing=record))
    assert finding.metrics["direction"] == "cp.async loads and stores"
    golden("cp_async_and_stores", prose([finding]))  # the advice: copies and writes


def test_a_direction_whose_widths_do_not_match_is_named_as_not_judged(golden):
    # the reduction chain's last kernel: a handful of loads whose opcode count (16) is not the
    # hardware's (8), and one store of one lane
    profile = synthetic(coalescing=_global(
        GlobalAccesses(sectors=8.0, bytes_per_sector=16.0, instructions=8.0),
        _lanes(1.0, 4.0, 1.0)))
    [finding] = coalescing.check(profile)
    assert finding.kind == "good"
    golden("widths_do_not_match", prose([finding]))


def test_shared_memory_is_left_to_the_bank_conflicts_finding():
    # register_tiled (H100, 1024): Source Counters counted 38% of its shared wavefronts
    # excess; the bank conflicts finding speaks of them, the coalescing finding of global
    # accesses only (Source Counters: 1,835,008 of 4,194,304 sectors excess per instruction,
    # 43.75%; here 43.80% of the 4,198,764 sectors L1TEX counted)
    (profile,) = cached_profiles(report(FIXTURES / "h100_full_register_tiled_1024.ncu-rep"))
    [finding] = coalescing.check(profile)
    assert finding.title.startswith("Global loads and stores are uncoalesced: 43.8%")
    # (L1TEX counts a few thousand sectors more than Source Counters from run to run)
    assert finding.metrics["excess_pct"] == pytest.approx(43.75, abs=0.15)
    # loads: LDS.128 at 2x their ideal wavefronts; stores: each STS at its ideal, though the
    # l1tex counter counts 15.6% of their wavefronts as conflicts
    assert [f.kind for f in bank_conflicts.check(profile)] == ["bad", "info"]


def test_not_collected():
    assert coalescing.check(synthetic()) == []
    # sectors without the bytes per sector, the instructions or the lanes' width: nothing to
    # compare with (a width whose opcode counts did not match the instructions is None)
    for partial in (GlobalAccesses(100.0, None, 25.0, 4.0, 4.0),
                    GlobalAccesses(100.0, 0.0, 25.0, 4.0, 4.0),
                    GlobalAccesses(100.0, 8.0, None, 4.0, 4.0),
                    GlobalAccesses(100.0, 8.0, 0.0, 4.0, 4.0),
                    GlobalAccesses(100.0, 8.0, 25.0, None, None),
                    GlobalAccesses(100.0, 8.0, 25.0, 32.0, 32.0)):  # no SASS lane is 32 B
        assert partial.ideal_sectors is None and partial.most_ideal_sectors is None
        assert coalescing.check(synthetic(coalescing=_global(partial))) == []
