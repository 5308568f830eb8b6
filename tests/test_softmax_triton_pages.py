"""The Triton softmax chain's pages from its real H100 run at 8192x8192
(reports/runs/softmax_triton-h100-8192: four ncu reports, manifest, bench results).

Its variants are `call =` launchers with no kernel of their own name: ncu captures them by
their `capture` filter. The first runs three Triton kernels, and that iteration is still one
page, about its longest launch, with the other two listed beside it and the bench time of the
whole launcher; never three pages each claiming the whole time."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from harness.pages.writeup import KernelPage, Writeup, collect
from harness.rundir import load_run

ROOT = Path(__file__).parent.parent
RUN = ROOT / "reports" / "runs" / "softmax_triton-h100-8192"
SWEEP = ROOT / "reports" / "softmax_triton" / "softmax_triton_bench.json"
PROJECT = ROOT / "kernels" / "softmax_triton"
CHAIN = ["naive", "online", "fused", "multi_row"]


@functools.cache
def writeup(with_project: bool) -> Writeup:
    return collect([RUN, SWEEP], project=PROJECT if with_project else None)


def page(variant: str, with_project: bool = True) -> KernelPage:
    [only] = [p for p in writeup(with_project).pages if p.variant == variant]
    return only


@pytest.mark.parametrize("with_project", [True, False])
def test_one_page_per_iteration_even_for_three_kernels(with_project: bool) -> None:
    pages = writeup(with_project).pages
    assert [p.variant for p in pages] == CHAIN
    naive = page("naive", with_project)
    # the longest of the three launches under ncu is the page's kernel
    assert naive.kernel_name == "softmax_naive_exp_sum"
    rows = {row.kernel: row for row in naive.launches}
    assert sorted(rows) == ["softmax_naive_divide", "softmax_naive_exp_sum",
                            "softmax_naive_max"]
    assert rows["softmax_naive_exp_sum"].main
    assert rows["softmax_naive_exp_sum"].duration_us == pytest.approx(184.19, abs=0.01)
    assert rows["softmax_naive_max"].duration_us == pytest.approx(89.70, abs=0.01)
    assert sum(row.share_pct for row in naive.launches) == pytest.approx(100.0)
    # the iteration's time is the launcher's bench median, all three kernels together
    assert naive.time_source == "bench"
    assert naive.time_ms == pytest.approx(0.4733, abs=1e-4)
    for p in pages[1:]:
        assert p.launches == [] and p.kernel_name == f"softmax_{p.variant}"


def test_the_manifest_records_each_variants_capture_filter() -> None:
    manifest = json.loads((RUN / "manifest.json").read_text())
    chain = {v["name"]: v for v in manifest["project"]["chain"]}
    assert {name: v["capture"] for name, v in chain.items()} == {
        "naive": "regex:^softmax_naive_", "online": "regex:^softmax_online",
        "fused": "regex:^softmax_fused", "multi_row": "regex:^softmax_multi_row"}
    assert [v.capture for v in load_run(RUN).record.project.chain] == [
        chain[name]["capture"] for name in CHAIN]


def test_the_best_iteration_beats_pytorch_near_the_copy() -> None:
    fused = page("fused")
    assert fused.speedups is not None and fused.speedups.reference is not None
    assert fused.speedups.reference >= 1.0          # 1.59x PyTorch on the H100
    assert 85.0 <= fused.gbps / 2946.5 * 100 <= 101.0  # % of the device copy in the same run


def timings(p: KernelPage) -> list:
    """The page's time finding against the previous iteration."""
    return [f for f in p.good + p.bad if f.rule == "progress" and "speedup" in f.metrics]


def test_an_iteration_after_three_launches_is_timed_against_all_three() -> None:
    online = page("online")
    [timing] = timings(online)
    # 456.90 us over naive's three launches against online's 256.77 us: faster, not the
    # "regression" its main kernel alone (184.19 us) would make of it
    assert timing.kind == "good"
    assert timing.metrics["speedup"] == pytest.approx(456.90 / 256.77, rel=1e-3)
    assert "3 before, 1 now" in timing.title
    assert online.previous_launches == 3
    fused = page("fused")  # one launch each side: its main kernel's time, as before
    [timing] = timings(fused)
    assert timing.metrics["speedup"] == pytest.approx(256.77 / 175.84, rel=1e-3)
    assert "launches" not in timing.title and fused.previous_launches == 1


def test_a_page_names_the_parameters_its_run_used() -> None:
    # the tuned winner, not the defaults its strategy describes (TILE 8192, STAGES 2)
    assert page("multi_row").params == {"TILE": 4096, "PER_THREAD": 32, "PROGRAMS_PER_SM": 2,
                                        "STAGES": 1}
    assert page("fused").params == {"PER_THREAD": 16}
