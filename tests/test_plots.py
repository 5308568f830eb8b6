"""The index plots render to PNG, with missing values and a single kernel too."""

from __future__ import annotations

from harness.pages.plots import (
    gflops_chart,
    occupancy_chart,
    roofline_chart,
    stall_chart,
    to_data_uri,
)
from harness.report.roofline import Roofline

PNG = b"\x89PNG\r\n\x1a\n"


def test_every_plot_renders_with_gaps():
    labels = ["0. naive", "1. coalesced"]
    plots = [
        gflops_chart(labels, [390.2, None], reference=None),
        stall_chart(labels, [{"lg_throttle": 393.0}, {}]),
        roofline_chart(labels, [Roofline(achieved_flops=3.9e11, peak_flops=5.37e13,
                                          dram_bytes_per_second=2.3e9,
                                          peak_dram_bytes_per_second=3.35e12), Roofline()]),
        occupancy_chart(labels, [100.0, None], [92.8, None], ["registers, warps", ""]),
    ]
    assert [p.name for p in plots] == ["gflops", "stalls", "roofline", "occupancy"]
    for plot in plots:
        assert plot.png.startswith(PNG)
        assert plot.data_uri.startswith("data:image/png;base64,iVBORw0KGgo")


def test_same_data_same_bytes(monkeypatch):
    monkeypatch.setenv("NCUH_REPORT_AND_PLOT_CACHE", "off")  # drawn twice, not kept and read back
    first = gflops_chart(["a"], [1.0], reference=2.0).png
    assert first == gflops_chart(["a"], [1.0], reference=2.0).png
    assert to_data_uri(b"x") == "data:image/png;base64,eA=="
