"""Few waves and the tail effect (Launch Statistics)."""

from __future__ import annotations

import pytest
from findings_support import smem, synthetic

from harness.findings import waves
from harness.report.model import LaunchConfig


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
    [finding] = waves.check(synthetic(launch=LaunchConfig(waves_per_sm=1.5)))
    assert finding.kind == "bad"
    assert finding.metrics["idle_pct"] == 25.0


def test_whole_waves_and_missing():
    assert waves.check(synthetic(launch=LaunchConfig(waves_per_sm=8.0))) == []
    assert waves.check(synthetic()) == []
