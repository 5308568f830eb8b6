"""Uncoalesced global access: excess sectors (Source Counters)."""

from __future__ import annotations

from findings_support import naive, smem, synthetic

from harness.findings import coalescing
from harness.report.kernel_profile import Coalescing


def test_naive_fixture_uncoalesced_matches_ncu_rule():
    # ncu UncoalescedGlobalAccess: "a total of 941359104 excessive sectors (85% of the total
    # 1109393408 sectors)"
    [finding] = coalescing.check(naive())
    assert finding.kind == "bad"
    assert finding.metrics["excessive_sectors"] == 941359104
    assert finding.metrics["sectors"] == 1109393408
    assert round(finding.metrics["excess_pct"]) == 85
    assert "941,359,104" in finding.text and "Source Counters" in finding.text
    assert finding.what_if


def test_smem_fixture_is_coalesced():
    [finding] = coalescing.check(smem())
    assert finding.kind == "good"


def test_synthetic_shared_excess_like_the_seed_page():
    # the seed: 8388608 excessive wavefronts of 117440512 (7%)
    profile = synthetic(coalescing=Coalescing(global_sectors=100.0, global_excessive_sectors=0.0,
                                              shared_wavefronts=117440512.0,
                                              shared_excessive_wavefronts=8388608.0))
    found = coalescing.check(profile)
    assert [f.kind for f in found] == ["good", "bad"]
    assert "7.1%" in found[1].title


def test_small_excess_is_not_a_problem():
    profile = synthetic(coalescing=Coalescing(global_sectors=100.0, global_excessive_sectors=3.0))
    assert coalescing.check(profile) == []


def test_not_collected():
    assert coalescing.check(synthetic()) == []
