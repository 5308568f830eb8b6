"""Few waves and the tail effect (Launch Statistics)."""

from __future__ import annotations

import pytest
from findings_support import smem, synthetic

from harness.findings import Finding, waves
from harness.report.model import LaunchConfig, Occupancy


def test_fixture_tail_is_small():
    # ncu: Waves Per SM 3.88 (3 full waves and a partial wave): the last wave is 88% full,
    # so about 3% of SM-time slots idle
    [finding] = waves.check(smem())
    assert finding.kind == "info"
    assert "3.88 waves" in finding.title
    assert finding.metrics["idle_pct"] == pytest.approx(100 * (4 - 3.878787878787879) / 4)


def test_less_than_one_wave():
    [finding] = waves.check(synthetic(launch=LaunchConfig(waves_per_sm=0.25, grid_size=33.0)))
    assert finding.kind == "bad"
    assert "25.0% of one wave" in finding.title


def test_half_empty_last_wave():
    # the arithmetic leaves 25% of the slots empty; what it costs is measured: without the
    # occupancy counters the tail is not judged a problem
    [finding] = waves.check(synthetic(launch=LaunchConfig(waves_per_sm=1.5)))
    assert finding.kind == "info"
    assert finding.metrics["idle_pct"] == 25.0


def test_a_tail_costs_what_the_empty_warp_slots_show():
    def tail(achieved: float) -> list[Finding]:
        return waves.check(synthetic(launch=LaunchConfig(waves_per_sm=1.5), occupancy=Occupancy(
            theoretical_pct=100.0, achieved_pct=achieved)))

    # 5% of the slots empty is the edge: a cost of 5% is a problem, 4.99% is not
    [costly] = tail(100.0 - waves.BAD_IDLE)
    assert costly.kind == "bad" and costly.weight == pytest.approx(waves.BAD_IDLE)
    [cheap] = tail(100.0 - waves.BAD_IDLE + 0.01)
    assert cheap.kind == "info" and "costs little" in cheap.title
    # the arithmetic bounds the cost: 40% empty slots behind a tail of 25% cost 25%
    [bounded] = tail(60.0)
    assert bounded.weight == pytest.approx(25.0)


def test_whole_waves_and_missing():
    assert waves.check(synthetic(launch=LaunchConfig(waves_per_sm=8.0))) == []
    assert waves.check(synthetic()) == []
