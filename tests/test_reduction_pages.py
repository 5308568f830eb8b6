"""The reduction chain's pages from its real H100 run at n = 2^26
(reports/runs/reduction-h100-2p26: ncu reports, manifest, bench results).

Most iterations run several launches (the main kernel, then passes over its partial sums):
each iteration gets one page about its main kernel, the other launches listed on it, and the
page's findings name the problem that iteration has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packed_fixtures import REDUCTION_RUN
from reduction_run import reduction_writeup

from harness.findings import bound, pipes, vectorization
from harness.pages.render import build_plots
from harness.pages.writeup import KernelPage, Writeup

ROOT = Path(__file__).parent.parent
RUN = REDUCTION_RUN

CHAIN = ["interleaved_divergent", "interleaved_strided", "sequential", "first_add",
         "unroll_last_warp", "complete_unroll", "grid_stride", "warp_shuffle", "vectorized",
         "single_pass"]
# launches per iteration at 2^26 (ncu: the main kernel, then the passes over partial sums)
LAUNCHES = [4, 4, 4, 3, 3, 3, 2, 2, 2, 1]


def writeup() -> Writeup:
    return reduction_writeup()


def page(variant: str) -> KernelPage:
    [only] = [p for p in writeup().pages if p.variant == variant]
    return only


def first_bad(p: KernelPage) -> str:
    return next(f.title for f in p.findings if f.kind == "bad" and f.rule != "progress")


def test_one_page_per_iteration_about_its_main_kernel():
    pages = writeup().pages
    assert [p.variant for p in pages] == CHAIN
    assert [p.slug for p in pages] == [f"{i:02d}_{v}_67108864" for i, v in enumerate(CHAIN)]
    for p, launches in zip(pages, LAUNCHES, strict=True):
        assert p.kernel_name == f"reduce_{p.variant}"
        # the main kernel is the launch that takes longest; the others are listed beside it
        assert len(p.launches) == (launches if launches > 1 else 0)
        if p.launches:
            main, *others = p.launches
            assert main.main and not any(o.main for o in others)
            assert all(main.duration_us > o.duration_us for o in others)
            assert sum(r.share_pct for r in p.launches) == pytest.approx(100.0)
            assert p.profile.launch.grid_size == int(main.grid.split("x")[0])


def test_launch_table_of_the_first_iteration():
    rows = page("interleaved_divergent").launches
    # ncu's gpu__time_duration.sum of the four launches: 805.60, 6.53, 4.06, 3.90 us
    assert [(r.grid, r.duration_us) for r in rows] == [
        ("262144x1x1", pytest.approx(805.6)), ("1024x1x1", pytest.approx(6.528)),
        ("4x1x1", pytest.approx(4.064)), ("1x1x1", pytest.approx(3.904))]
    assert rows[0].share_pct == pytest.approx(100 * 805.6 / (805.6 + 6.528 + 4.064 + 3.904))


def test_previous_iteration_time_counts_every_launch():
    strided = page("interleaved_strided")
    progress = [f for f in strided.good + strided.bad if f.rule == "progress"]
    speed = next(f for f in progress if "previous iteration under the profiler" in f.title)
    # all four launches of each: 820.10 us -> 485.18 us (the main kernels alone 805.60 us ->
    # 473.50 us; never the last pass's 3.90 us)
    assert speed.title.startswith("1.69x faster")
    assert "820.10 us -> 485.18 us over all launches (4 before, 4 now)" in speed.title
    for p in writeup().pages:
        assert not any("Regression" in f.title for f in p.findings), p.heading


def test_the_markdown_page_lists_the_other_launches(tmp_path: Path, golden):
    from harness.pages.render import write

    write(writeup(), tmp_path, "md")
    text = (tmp_path / "03_first_add_67108864.md").read_text(encoding="utf-8")
    # the section alone: the main launch (131072 blocks, 96.6% of the time) and the tail's
    launches = text[text.index("### Launches"):]
    golden("first_add_launches", launches[:launches.index("\n###", 1) + 1])
    assert len(list(tmp_path.glob("*.md"))) == len(CHAIN) + 1  # and the index
    # the instruction mix adds up to its heading, where ncu's counts by opcode sum to less
    # than smsp__inst_executed.sum (4,826,248 against 4,827,304 on the single pass)
    [single] = [p.profile for p in writeup().pages if p.variant == "single_pass"]
    assert single is not None and single.executed_instructions == 4_827_304
    mix = (tmp_path / "09_single_pass_67108864.md").read_text(encoding="utf-8")
    mix = mix[mix.index("### Instruction Mix"):]
    rows = re.findall(r"^\| [^|]+ \| ([0-9,]+) \|", mix[:mix.index("\n###", 1)], re.M)
    assert f"by class ({sum(int(n.replace(',', '')) for n in rows):,} in all" in mix
    assert "by class (4,826,248 in all, by opcode)" in mix


def test_index_shows_bandwidth_against_the_benched_limit():
    w = writeup()
    assert w.bytes_model and w.limit_name == "device copy"
    # bench: device_copy at 2^26 moves 8n bytes in its median time, 2948.0 GB/s
    assert w.limit_gbps == pytest.approx(2948.026, abs=0.01)
    best = page("single_pass")
    assert best.gbps == pytest.approx(2664.319, abs=0.01)
    assert best.pct_of_limit == pytest.approx(100 * 2664.319 / 2948.026, abs=0.01)
    assert best.pct_of_reference == pytest.approx(102.1, abs=0.05)
    plots = {plot.name: plot for plot in build_plots(w)}
    assert "gflops" not in plots
    assert plots["bandwidth"].title == "GB/s per iteration beside CUB and device copy"


# iteration -> words the TLDR holds: the problem of that iteration
TLDR = {
    "interleaved_divergent": "lanes doing work",
    "interleaved_strided": "shared-memory loads hit bank conflicts",  # excess wavefronts:
    "sequential": "only 19.4 of 32 lanes doing work",  # threads with no work left
    # the ADU's work from its executed opcodes: barriers, branches and constant loads
    "first_add": "ADU pipe at 77.2%: block barriers, branches and constant loads",
    "unroll_last_warp": "pipe binds the kernel: 64.8% of its peak, busy with branches (BRA, "
                        "37.1% of its instructions) and constant loads (LDC, 36.0%) and block "
                        "barriers (BAR, 27.0%)",
    "complete_unroll": "global loads are (almost) all 32-bit",
    "grid_stride": "global loads are (almost) all 32-bit",
    "warp_shuffle": "global loads are (almost) all 32-bit",
    # at 89.0% and 90.4% of the device copy benched in the same run: at the limit
    "vectorized": "The kernel runs at the limit: 2,623.5 GB/s, 89.0% of the device copy's "
                  "2,948.0 GB/s",
    "single_pass": "The kernel runs at the limit: 2,664.3 GB/s, 90.4% of the device copy's "
                   "2,948.0 GB/s",
}


@pytest.mark.parametrize("variant", CHAIN)
def test_tldr_names_the_iterations_problem(variant: str):
    assert TLDR[variant] in page(variant).tldr, page(variant).tldr


@pytest.mark.parametrize(("variant", "words"), [
    ("interleaved_divergent", "lanes doing work"),
    ("interleaved_strided", "Shared-memory"),
    ("sequential", "lanes doing work"),
    ("unroll_last_warp", "busy with branches (BRA"),
    ("grid_stride", "global loads are (almost) all 32-bit"),
])
def test_first_problem_of_the_page(variant: str, words: str):
    assert words in first_bad(page(variant))


def test_idle_lanes_lead_the_pipe_they_keep_busy():
    p = page("sequential")
    # ADU at 76.7% of peak with 19.4 of 32 lanes working: packed, 46.5% (below pipes.BUSY)
    [adu] = [f for f in p.findings if f.rule == "pipes"]
    assert adu.kind == "info" and "packed into full warps" in adu.title
    assert 76.7 * 19.42 / 32 < pipes.BUSY < 76.7


def test_idle_lanes_do_not_excuse_a_pipe_busy_for_the_working_ones():
    # unrolled last warp: 26.9 of 32 lanes work (no divergence finding), the ADU stays binding
    p = page("unroll_last_warp")
    assert not any(f.rule == "divergence" for f in p.findings)
    [adu] = [f for f in p.findings if f.rule == "pipes"]
    assert adu.kind == "bad" and "BAR 3,145,728" in adu.text


def test_vectorization_only_where_it_carries_instructions():
    for variant in ("sequential", "vectorized", "single_pass"):
        titles = [f.title for f in page(variant).findings if f.rule == "vectorization"]
        assert not any("not vectorized" in t for t in titles), (variant, titles)
    # a tree over shared memory: about as many shared loads as stores (no reuse to widen)
    p = page("sequential").profile
    loads = p.memory_widths.executed("shared", "load")
    stores = p.memory_widths.executed("shared", "store")
    assert 100 * loads / p.executed_instructions > vectorization.MIN_INSTRUCTION_SHARE
    assert loads < vectorization.SHARED_REUSE * stores
    # grid-stride: LDG.E (32-bit) is 13.9% of executed instructions, the one scalar width
    [grid] = [f for f in page("grid_stride").findings if f.rule == "vectorization"]
    assert grid.kind == "bad" and "global loads are" in grid.title
    assert "shared" not in grid.title and "too few to matter" in grid.text


def test_near_dram_peak_edge():
    p = page("grid_stride").profile  # DRAM at 80.8%: not yet near
    assert bound.near_dram_peak(p) is None
    assert bound.near_dram_peak(page("single_pass").profile) == pytest.approx(88.2, abs=0.05)


# ---------------------------------------------------------------------------------------------
# advice that fits the bound and the shape


TILING_WORDS = ("tile", "cp.async", "double buffering")


def test_the_reduction_gets_no_tiling_advice():
    # a reduction streams its input once: "larger tiles" and "the next tile ... cp.async"
    # are a matrix multiply's fixes, not its own
    for p in writeup().pages:
        for fix in p.fix_ideas:
            words = f"{fix.title} {fix.text or ''} {fix.what_if}".lower()
            assert not any(w in words for w in TILING_WORDS), (p.heading, fix.what_if)
    shuffle = page("warp_shuffle")
    assert [f.title for f in shuffle.fix_ideas][:3] == [
        "Use fewer but wider global loads.", "Keep more bytes in flight.", "Move fewer bytes."]


def test_a_tiled_sgemm_keeps_its_tiling_advice():
    from packed_fixtures import report as fixture_report

    from harness.findings import shape
    from harness.pages.writeup import collect as collect_pages
    from harness.report.builder import load_kernel_reports

    report = fixture_report(ROOT / "tests" / "fixtures" / "h100_pages_register_tiled_1024.ncu-rep")
    [profile] = load_kernel_reports(report)
    assert shape.tiles(profile)  # 4 shared loads per store, 4.1% of its instructions
    [tiled] = collect_pages([report]).pages
    assert any("next tile" in fix.what_if for fix in tiled.fix_ideas)


def test_the_index_shows_gb_per_s_without_bench_results():
    # the project counts bytes (4n): GB/s over the profiled duration, with no bench.json
    alone = reduction_writeup(with_bench=False)
    assert alone.bytes_model
    shuffle = next(p for p in alone.pages if p.variant == "warp_shuffle")
    assert shuffle.time_source == "ncu" and shuffle.work_source == "model"
    # 4 * 2^26 bytes in 99.808 us (ncu's gpu__time_duration.sum)
    assert shuffle.gbps == pytest.approx(4 * 2**26 / 99.808e-6 / 1e9)
    assert round(shuffle.gbps, 1) == 2689.5
