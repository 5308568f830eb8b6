"""Roofline numbers read from the report's own roofline metrics."""

from __future__ import annotations

import pytest
from packed_fixtures import NAIVE_SMEM_REPORT, cached_profiles

from harness.report.roofline import Roofline

REPORT = NAIVE_SMEM_REPORT


@pytest.fixture(scope="module")
def rooflines():
    return [profile.roofline for profile in cached_profiles(REPORT)]


def test_achieved_flops_match_the_problem_and_duration(rooflines):
    # 1024^3 SGEMM: 2 * 1024^3 FLOP in 5,511,008 ns (naive) and 300,928 ns (smem)
    naive, smem = rooflines
    assert naive.achieved_flops == pytest.approx(2 * 1024**3 / 5.511008e-3, rel=0.005)
    assert smem.achieved_flops == pytest.approx(2 * 1024**3 / 300.928e-6, rel=0.005)


def test_peak_fraction_matches_ncu_roofline_rule(rooflines):
    # ncu SOLFPRoofline: "achieved close to 1%" (naive) and "13% of this device's FP32 peak"
    naive, smem = rooflines
    assert round(smem.peak_fraction_pct) == 13
    assert round(naive.peak_fraction_pct) == 1
    # H100 SXM at ncu's base clock 1.59 GHz: 16,896 FFMA/cycle * 2 -> 53.7 TFLOP/s
    assert smem.peak_flops == pytest.approx(2 * 16896 * 1.5935e9, rel=0.001)
    # DRAM: 1,280 bytes/cycle at 2.62 GHz -> 3.35 TB/s
    assert smem.peak_dram_bytes_per_second == pytest.approx(1280 * 2.6186e9, rel=0.001)
    assert smem.ridge_point == pytest.approx(16.06, abs=0.01)


def test_intensity_from_dram_bytes(rooflines):
    # smem: DRAM Bandwidth 41.83 GB/s (dram__bytes.sum.per_second) in the roofline section
    smem = rooflines[1]
    assert smem.dram_bytes_per_second == pytest.approx(41.83e9, rel=0.001)
    assert smem.arithmetic_intensity == pytest.approx(7.1467e12 / 41.83e9, rel=0.001)


def test_missing_metrics_stay_none():
    empty = Roofline()
    assert empty.arithmetic_intensity is None and empty.ridge_point is None
    assert empty.peak_fraction_pct is None
