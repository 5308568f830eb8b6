"""Iterations side by side: the "Since the previous iteration" table tells the same numbers
as `ncuh diff` on the same pair, and the index lays the chain's key counters side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from packed_fixtures import H100_PAGES_SMEM_TILED, REDUCTION_RUN, report
from reduction_run import reduction_writeup

from harness.diff.compare import diff_runs
from harness.pages.render import build_plots, render_index, render_page
from harness.pages.side_by_side import since_previous
from harness.pages.writeup import Writeup
from harness.report.builder import load_kernel_reports

ROOT = Path(__file__).parent.parent
RUN = REDUCTION_RUN
# table key -> diff's metric key and the factor from the table's unit to diff's
SAME_AS_DIFF = {"time": ("time", 1e3), "instructions": ("instructions", 1.0),
                "registers": ("registers", 1.0), "shared_memory": ("shared_memory", 1.0),
                "dram_read_bytes": ("dram_read_bytes", 1.0),
                "dram_write_bytes": ("dram_write_bytes", 1.0), "l2_bytes": ("l2_bytes", 1.0)}


def writeup() -> Writeup:
    return reduction_writeup(with_bench=False)


def _diff_metrics(base: Path, cur: Path, pairs: dict[str, str]) -> dict[str, object]:
    result = diff_runs(base, cur, pairs=pairs)
    # the pair of main launches: the longest of the current kernel's launches (its later,
    # shorter launches are passes over partial sums, the page lists them apart)
    launches = [k for k in result.kernels if k.current.function == next(iter(pairs.values()))]
    kernel = max(launches, key=lambda k: k.current.metric("gpu__time_duration.sum") or 0.0)
    return {m.key: m for m in kernel.metrics}


@pytest.mark.parametrize(("before", "after"), [("grid_stride", "warp_shuffle"),
                                                ("warp_shuffle", "vectorized")])
def test_since_previous_matches_ncuh_diff(before: str, after: str):
    page = next(p for p in writeup().pages if p.variant == after)
    assert page.previous_slug is not None and before in page.previous_slug
    metrics = _diff_metrics(RUN / f"{before}_67108864.ncu-rep", RUN / f"{after}_67108864.ncu-rep",
                            {f"reduce_{before}": f"reduce_{after}"})
    rows = {c.key: c for c in page.since_previous}
    for key, (diff_key, factor) in SAME_AS_DIFF.items():
        verdict = metrics[diff_key]
        assert rows[key].before * factor == pytest.approx(verdict.baseline, rel=1e-12), key
        assert rows[key].after * factor == pytest.approx(verdict.current, rel=1e-12), key
        assert rows[key].change_pct == pytest.approx(verdict.change_pct, rel=1e-9), key


def test_the_warp_shuffle_table_on_real_numbers():
    page = next(p for p in writeup().pages if p.variant == "warp_shuffle")
    rows = {c.key: c for c in page.since_previous}
    # ncu: 100.000 us -> 99.808 us; shared memory 1,024 -> 32 bytes per block
    assert (rows["time"].before, rows["time"].after) == (pytest.approx(100.0),
                                                         pytest.approx(99.808))
    assert (rows["shared_memory"].before, rows["shared_memory"].after) == (1024, 32)
    assert rows["shared_memory"].change_pct == pytest.approx(-96.875)
    assert rows["bound_unit"].label == "DRAM throughput"
    assert [c.key for c in page.since_previous if c.key.startswith("stall:")] == [
        "stall:long_scoreboard", "stall:wait", "stall:barrier"]
    md = render_page(page, writeup(), "md")
    assert "| Shared memory per block | 1.02 KB | 32 B | -96.9% |" in md
    assert "| Duration (ncu) | 100.00 us | 99.81 us | -0.2% |" in md


def test_the_first_iteration_has_no_previous_table():
    first = writeup().pages[0]
    assert first.since_previous == []
    assert "Since the previous iteration" not in render_page(first, writeup(), "md")


def test_the_index_lays_the_chain_side_by_side():
    md = render_index(writeup(), [], "md")
    assert "### Side by side" in md
    assert ("| [Iteration 7: Warp-Shuffle Reduction](07_warp_shuffle_67108864.md) | 99.81 us | "
            "DRAM throughput 81.0% | 97.2% | 18 | 32 B | 15,017,984 |") in md
    html = render_index(writeup(), [], "html")
    assert '<table class="side">' in html and html.count("<tr>") >= 11


def test_the_bound_unit_plot_names_each_iterations_unit():
    plots = {p.name: p for p in build_plots(writeup())}
    assert plots["bound_unit"].png.startswith(b"\x89PNG")
    pages = writeup().pages
    units = [next(k.label for k in p.key_values if k.key == "bound_unit") for p in pages]
    assert units[0] == "XU pipe" and units[-1] == "DRAM throughput"


def test_side_by_side_of_two_sgemm_reports():
    register_tiled = report(ROOT / "tests" / "fixtures" / "h100_pages_register_tiled_1024.ncu-rep")
    [smem] = load_kernel_reports(H100_PAGES_SMEM_TILED)
    [tiled] = load_kernel_reports(register_tiled)
    rows = {c.key: c for c in since_previous(smem, tiled)}
    metrics = _diff_metrics(H100_PAGES_SMEM_TILED, register_tiled,
                            {"sgemm_smem_tiled": "sgemm_register_tiled"})
    for key, (diff_key, factor) in SAME_AS_DIFF.items():
        assert rows[key].before * factor == pytest.approx(metrics[diff_key].baseline), key
        assert rows[key].after * factor == pytest.approx(metrics[diff_key].current), key
