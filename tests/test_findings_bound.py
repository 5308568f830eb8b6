"""The speed-of-light rule: memory-, compute- or latency-bound, as ncu's SOLBottleneck says."""

from __future__ import annotations

from findings_support import naive, smem, synthetic

from harness.findings import bound
from harness.report.model import SpeedOfLight


def test_naive_fixture_is_memory_bound_on_l1():
    # ncu: Memory Throughput 95.93%, L1/TEX 98.99%, Compute (SM) 5.81%; SOLBottleneck
    # "utilizing greater than 80.0% ... Start by analyzing L1"
    assert bound.classify_bound(naive()) == "memory"
    [finding] = bound.check(naive())
    assert finding.kind == "bad"
    assert finding.metrics["memory_unit"] == "L1/TEX"
    assert "95.9%" in finding.title and "99.0%" in finding.title and "5.8%" in finding.title
    assert finding.section == "GPU Speed Of Light Throughput"
    assert finding.what_if and finding.what_if.startswith("What if")


def test_smem_fixture_is_memory_bound_with_busy_compute():
    # Memory 87.01% against compute 73.05%: memory binds, but compute is busy too -> info
    [finding] = bound.check(smem())
    assert finding.metrics["bound"] == "memory"
    assert finding.kind == "info"
    assert "87.0%" in finding.title and "73.0%" in finding.title


def test_latency_bound_when_both_below_sixty():
    profile = synthetic(speed_of_light=SpeedOfLight(compute_throughput_pct=47.15,
                                                    memory_throughput_pct=48.97))
    [finding] = bound.check(profile)
    assert bound.classify_bound(profile) == "latency"
    assert finding.kind == "bad"
    assert "latency-bound" in finding.title


def test_compute_bound_is_good():
    profile = synthetic(speed_of_light=SpeedOfLight(compute_throughput_pct=85.0,
                                                    memory_throughput_pct=40.0))
    [finding] = bound.check(profile)
    assert finding.kind == "good"
    assert "compute-bound and near saturation" in finding.title


def test_dram_bound_points_at_dram():
    profile = synthetic(speed_of_light=SpeedOfLight(
        compute_throughput_pct=20.0, memory_throughput_pct=90.0, dram_throughput_pct=90.0,
        l1_throughput_pct=30.0, l2_throughput_pct=40.0))
    [finding] = bound.check(profile)
    assert finding.metrics["memory_unit"] == "DRAM"
    assert "arithmetic intensity" in (finding.what_if or "")


def test_not_collected_gives_nothing():
    assert bound.check(synthetic()) == []
    assert bound.classify_bound(synthetic()) is None
