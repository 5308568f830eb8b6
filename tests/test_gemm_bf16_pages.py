"""The BF16 tensor-core GEMM chain's pages from its real H200 run at 4096³
(reports/runs/gemm_bf16-h200-4096: four ncu reports, manifest, bench results against
cublasGemmEx). Each page's bound and main finding are pinned, each named by the instructions
that carry it: the tensor pipe by WGMMA (HGMMA), the loads by cp.async (LDGSTS), the waits by
the mbarrier try-wait (SYNCS) at its source line; and the committed pages in reports/gemm_bf16
are what `ncuh writeup` writes from the run.
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
CHAIN = ["wmma", "mma_ldmatrix", "multistage", "wgmma_tma"]


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
    ("wgmma_tma", "The kernel is compute-bound (Tensor (FP) pipe at 85.4%, near its peak: "
     "WGMMA (HGMMA)); no rule found a clear problem.", "progress"),
])
def test_each_pages_bound_and_main_finding(variant: str, bound: str, first: str) -> None:
    shown = page(variant)
    assert shown.tldr.startswith(bound)
    assert shown.findings[0].rule == first


def test_the_wgmma_pages_waits_are_named_by_their_instructions_and_source_lines() -> None:
    text = (PAGES / "03_wgmma_tma_4096x4096x4096.md").read_text()
    assert "at mbarrier waits (SYNCS): 99.4% of its samples" in text
    assert "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, \\[R8+UR6\\], R3\\` at wgmma_tma.cu:175" in text
    assert "HGMMA.64x128x16.F32.BF16" in text
    # the GMMA stall has no PC samples in the report: its instructions are not judged
    assert "Which instructions cause it is not judged" in text
    assert "It runs at 93.2% of cuBLAS's speed." in text


def test_the_ldmatrix_pages_store_conflicts_are_the_reports() -> None:
    text = (PAGES / "01_mma_ldmatrix_4096x4096x4096.md").read_text()
    assert "1,493,427 bank conflicts are 8.17% of the 18,270,643 store wavefronts" in text
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
