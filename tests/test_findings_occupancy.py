"""Occupancy: the limiter, and theoretical against achieved."""

from __future__ import annotations

from findings_support import naive, prose, smem, synthetic

from harness.findings import occupancy
from harness.report.model import LaunchConfig, Occupancy


def test_fixture_occupancy_is_high():
    # ncu Occupancy: Theoretical 100%, Achieved 93.53% (smem) / 92.82% (naive)
    [finding] = occupancy.check(smem())
    assert finding.kind == "good"
    assert "93.5%" in finding.title and "100.0%" in finding.title
    [finding] = occupancy.check(naive())
    assert "92.8%" in finding.title
    # at 100% theoretical the tied smallest block limits (registers 2, warps 2) limit nothing
    assert "limited by" not in finding.title


def test_shared_memory_limiter_like_the_seed_page(golden):
    # the seed's register_tiled: Block Limit Shared Mem 2, Registers 4, Warps 4 -> 50%
    profile = synthetic(
        occupancy=Occupancy(theoretical_pct=50.0, achieved_pct=49.21,
                            block_limits={"registers": 4.0, "shared_mem": 2.0, "warps": 4.0,
                                          "blocks": 16.0}),
        launch=LaunchConfig(registers_per_thread=64.0, shared_mem_static_bytes=32768.0,
                            shared_mem_dynamic_bytes=0.0),
    )
    [finding] = occupancy.check(profile)
    assert finding.kind == "bad"
    assert finding.metrics["limiter"] == "shared_mem"
    assert finding.section == "Occupancy"
    golden("limited_by_shared_memory", prose([finding]))  # 50.0%, 32.0 KiB, 2 blocks per SM


def test_achieved_far_below_theoretical():
    profile = synthetic(occupancy=Occupancy(theoretical_pct=100.0, achieved_pct=45.0,
                                            block_limits={"warps": 2.0}))
    [finding] = occupancy.check(profile)
    assert finding.kind == "bad"
    assert "45.0%" in finding.title


def test_not_collected():
    assert occupancy.check(synthetic()) == []


def test_one_block_per_sm_is_singular(golden):
    # the H100 register_tiled at 4096: 162 registers, one block of 256 threads per SM
    profile = synthetic(
        occupancy=Occupancy(theoretical_pct=12.5, achieved_pct=12.5,
                            block_limits={"registers": 1.0, "shared_mem": 1.0, "warps": 8.0,
                                          "blocks": 32.0}),
        launch=LaunchConfig(registers_per_thread=162.0, shared_mem_static_bytes=8192.0,
                            shared_mem_dynamic_bytes=0.0),
    )
    [finding] = occupancy.check(profile)
    golden("one_block_per_sm", prose([finding]))  # "(1 block per SM)", both limiters named
