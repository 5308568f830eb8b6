"""The BF16 tensor-core GEMM chain's pages from its real H200 run at 4096³
(reports/runs/gemm_bf16-h200-4096: seven ncu reports, manifest, bench results against
cublasGemmEx). Each page's bound and main finding are pinned, each named by the instructions
that carry it: the tensor pipe by WGMMA (HGMMA), the loads by cp.async (LDGSTS), the waits by
the mbarrier try-wait (SYNCS) and the WGMMA's warpgroup arrive (the GMMA stall) at their source
lines, a cluster's traffic by its multicast TMA copies and cluster-address arrivals; and the
committed pages in reports/gemm_bf16 are what `ncuh writeup` writes from the run.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from pages_support import assert_pages_as_committed, write_pages

from harness.findings.oracle import contradictions, page_contradictions
from harness.pages.writeup import KernelPage, Writeup, collect

ROOT = Path(__file__).parent.parent
RUN = ROOT / "reports" / "runs" / "gemm_bf16-h200-4096"
PAGES = ROOT / "reports" / "gemm_bf16"
PROJECT = ROOT / "kernels" / "gemm_bf16"
CHAIN = ["wmma", "mma_ldmatrix", "multistage", "wgmma_tma", "ws", "cluster", "autotuned"]


@functools.cache
def writeup() -> Writeup:
    return collect([RUN, RUN / "bench.json"], project=PROJECT)


def page(variant: str) -> KernelPage:
    [only] = [p for p in writeup().pages if p.variant == variant]
    return only


def test_one_page_per_iteration_in_chain_order() -> None:
    assert [p.variant for p in writeup().pages] == CHAIN


@pytest.mark.parametrize("variant,bound,first", [
    ("wmma", "The kernel is latency-bound (busiest memory unit L1/TEX at 45.7%)", "occupancy"),
    ("mma_ldmatrix", "The kernel is memory-bound (L1/TEX)", "occupancy"),
    ("multistage", "The kernel is memory-bound (L1/TEX, loads by cp.async (LDGSTS))",
     "occupancy"),
    ("wgmma_tma", "The kernel is compute-bound (Tensor (FP) pipe at 85.1%, near its peak: "
     "WGMMA (HGMMA)); no rule found a clear problem.", "progress"),
    ("ws", "The kernel is compute-bound (Tensor (FP) pipe at 91.2%, near its peak: "
     "WGMMA (HGMMA)); no rule found a clear problem.", "pipes"),
    ("cluster", "The kernel is compute-bound (Tensor (FP) pipe at 91.1%, near its peak: "
     "WGMMA (HGMMA)); no rule found a clear problem.", "pipes"),
    ("autotuned", "The kernel is compute-bound (Tensor (FP) pipe at 91.2%, near its peak: "
     "WGMMA (HGMMA)); no rule found a clear problem.", "pipes"),
])
def test_each_pages_bound_and_main_finding(variant: str, bound: str, first: str) -> None:
    shown = page(variant)
    assert shown.tldr.startswith(bound)
    assert shown.findings[0].rule == first


def test_the_wgmma_pages_waits_are_named_by_their_instructions_and_source_lines() -> None:
    text = (PAGES / "03_wgmma_tma_4096x4096x4096.md").read_text()
    assert "at mbarrier waits (SYNCS.PHASECHK): 99.4% of its samples" in text
    assert "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, \\[R6+UR6\\], R3\\` at wgmma_tma.cu:47" in text
    # the GMMA stall is sampled as warpgroup_arrive, at the WGMMA waiting on its arrive
    assert "Warps stall on GMMA: 1.9 of every 8.8 cycles" in text
    assert "(21.3%), at warpgroup MMAs and their waits (HGMMA)" in text
    assert "HGMMA.64x128x16.F32.BF16 R24, gdesc\\[UR12\\].tnspB, R24\\` at hopper.cuh:155" in text
    assert "Which instructions cause it is not judged" not in text
    assert "It runs at 92.5% of cuBLAS's speed." in text


@pytest.mark.parametrize(("variant", "share", "speed"), [
    ("ws", "2.8 of every 9.5 cycles between two instructions (30.1%)", "96.9%"),
    ("cluster", "2.8 of every 9.1 cycles between two instructions (30.3%)", "97.5%"),
])
def test_the_specialized_pages_name_the_wgmma_wait_at_its_source(variant: str, share: str,
                                                                 speed: str) -> None:
    """The consumers wait on the tensor cores: the GMMA stall, at the HGMMA of hopper.cuh."""
    shown = page(variant)
    [gmma] = [f for f in shown.findings if f.metrics.get("reason") == "gmma"]
    assert gmma.title.startswith(f"Warps stall on GMMA: {share}, at warpgroup MMAs")
    assert "HGMMA.64x128x16.F32.BF16 R88, gdesc[UR16].tnspB, R88, UP0` at hopper.cuh:156" in (
        gmma.text)
    assert f"It runs at {speed} of cuBLAS's speed." in shown.tldr
    # USETMAXREG: the producer gives registers back, the consumers take them
    opcodes = dict(shown.profile.metrics["sass__inst_executed_per_opcode_with_modifier_all"]
                   .instances)
    assert opcodes["USETMAXREG.DEALLOC.CTAPOOL"] == 528  # 132 blocks x 4 producer warps
    assert opcodes["USETMAXREG.TRY_ALLOC.CTAPOOL"] >= 1056  # 8 consumer warps, retried


@pytest.mark.parametrize("variant", ["cluster", "autotuned"])
def test_the_cluster_pages_name_its_traffic_by_its_instructions(variant: str) -> None:
    [finding] = [f for f in page(variant).findings if f.rule == "clusters"]
    assert finding.title.startswith("Thread-block clusters: 66 clusters of 2 blocks (2x1x1);")
    assert "distributed-shared-memory traffic not judged (no DSMEM counters)" in finding.title
    assert "; in the SASS: multicast TMA copies, mbarrier arrivals" in finding.title
    assert finding.title.endswith("through a cluster address, cluster barriers.")
    assert ("multicast TMA copies: 65,536 executed (`UTMALDG.2D.MULTICAST` at cluster.cu:55, "
            "cluster.cu:68)") in finding.text
    assert "mbarrier arrivals through a cluster address: 524,288 executed" in finding.text
    assert "(`SYNCS.ARRIVE.TRANS64.RED.A1T0` at cluster.cu:142, cluster.cu:149)" in finding.text
    # the cluster barrier runs once per warp, at the start: no stall finding names it
    assert "cluster barriers: 3,168 executed" in finding.text
    assert not [f for f in page(variant).findings if f.metrics.get("reason") == "barrier"]


def test_the_index_names_the_wgmma_wait_by_its_instructions() -> None:
    index = (PAGES / "index.md").read_text()
    assert index.count("GMMA stalls at warpgroup MMAs and their waits") == 3  # ws, cluster, ...
    assert "long scoreboard stalls at mbarrier waits (SYNCS.PHASECHK)" in index  # wgmma_tma


def test_the_ws_page_has_no_cluster() -> None:
    assert not [f for f in page("ws").findings if f.rule == "clusters"]


def test_the_ldmatrix_pages_store_conflicts_are_the_reports() -> None:
    text = (PAGES / "01_mma_ldmatrix_4096x4096x4096.md").read_text()
    assert "1,515,100 bank conflicts are 8.28% of the 18,292,316 store wavefronts" in text
    assert "Shared-memory stores hit bank conflicts" in text


@pytest.mark.parametrize("variant", CHAIN)
def test_no_sentence_of_a_page_is_contradicted(variant: str) -> None:
    pages = writeup().pages
    shown = page(variant)
    assert shown.profile is not None
    assert page_contradictions(shown.profile, shown.tldr, len(shown.fix_ideas),
                               shown.pct_of_limit) == []
    previous = next((p.profile for p in pages if p.slug == shown.previous_slug), None)
    assert contradictions(shown.profile, [*shown.findings, *shown.good], previous) == []


def test_the_committed_pages_are_what_writeup_writes(tmp_path: Path) -> None:
    """Markdown and HTML byte for byte but for the plots' own bytes."""
    write_pages("--project", str(PROJECT), "writeup", str(RUN), str(RUN / "bench.json"),
                "--out", str(tmp_path))
    assert_pages_as_committed(tmp_path, PAGES, ["index", *(page.slug for page in
                                                         writeup().pages)])
