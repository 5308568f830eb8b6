"""`ncuh writeup` of the same kernels profiled on two GPU models: one comparison page, each
figure a share of its own GPU's peak (the SGEMM variants at 1024^3 on an H100 and an H200)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from packed_fixtures import H100_PAGES_NAIVE, H100_PAGES_SMEM_TILED, report

from harness.pages.render import write
from harness.pages.writeup import Writeup, collect

ROOT = Path(__file__).parent.parent
H100 = [H100_PAGES_NAIVE, H100_PAGES_SMEM_TILED,
        report(ROOT / "tests" / "fixtures" / "h100_pages_register_tiled_1024.ncu-rep")]
H200 = ROOT / "benchmarks" / "data" / "h200_five_variants_1024.ncu-rep"


@functools.cache
def writeup() -> Writeup:
    return collect([*H100, report(H200)])


def test_one_comparison_of_the_kernels_both_gpus_ran():
    gpus = writeup().gpus
    assert gpus is not None
    assert gpus.devices == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
    # the H200 report holds five variants; three of them were profiled on the H100 too
    assert [k.kernel for k in gpus.kernels] == ["sgemm_naive", "sgemm_smem_tiled",
                                                "sgemm_register_tiled"]


def test_figures_are_each_gpus_own_numbers():
    gpus = writeup().gpus
    assert gpus is not None
    naive = gpus.kernels[0]
    figures = {f.label: f for f in naive.figures}
    # ncu's gpu__time_duration.sum: 5,510.208 us on the H100, 5,834.816 us on the H200
    assert figures["Duration (ncu)"].values == (pytest.approx(5510.208), pytest.approx(5834.816))
    h100, h200 = (next(p for p in writeup().pages if p.device == d and p.kernel_name ==
                       "sgemm_naive").profile for d in gpus.devices)
    assert figures["SM throughput"].values == (h100.speed_of_light.compute_throughput_pct,
                                               h200.speed_of_light.compute_throughput_pct)
    assert figures["Memory throughput"].unit == "% of peak"
    # the register-tiled kernel binds differently on the two chips
    assert gpus.kernels[2].bound == ("L1/TEX 41.4%", "FMA pipe 30.5%")


def test_the_comparison_page_is_written_and_linked(tmp_path: Path):
    write(writeup(), tmp_path)
    md = (tmp_path / "gpus.md").read_text(encoding="utf-8")
    assert md.startswith("# The same kernels on 2 GPU models\n")
    assert "| Figure | NVIDIA H100 80GB HBM3 | NVIDIA H200 |" in md
    assert "| Duration (ncu) | 5,510.21 us | 5,834.82 us |" in md
    assert "[GPU comparison](gpus.md)" in (tmp_path / "index.md").read_text(encoding="utf-8")
    html = (tmp_path / "gpus.html").read_text(encoding="utf-8")
    assert html.count('<table class="gpus">') == 3
    assert 'href="gpus.html"' in (tmp_path / "index.html").read_text(encoding="utf-8")


def test_one_gpu_model_gets_no_comparison():
    assert collect(H100).gpus is None
