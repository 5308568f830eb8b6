"""The SGEMM chain's committed pages (reports/chain/, from the H200 run at 4096³ whose reports
are packed with xz) and the page of `autotuned` at 333x777x4099 (reports/sgemm_333x777x4099/,
Markdown only) are what `ncuh writeup` writes from their runs with the bundled project."""

from __future__ import annotations

from pathlib import Path

from pages_support import assert_pages_as_committed, unpacked_copy, write_pages

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "kernels" / "sgemm"
RUNS = ROOT / "reports" / "runs"


def test_the_chain_pages_are_what_writeup_writes(tmp_path: Path) -> None:
    run = unpacked_copy(RUNS / "sgemm-h200-4096", tmp_path)
    committed = ROOT / "reports" / "chain"
    write_pages("--project", str(PROJECT), "writeup", str(run), "--out", str(tmp_path / "out"))
    pages = sorted(path.stem for path in committed.glob("*.md"))
    assert len(pages) == 12 and pages[-1] == "index"
    assert_pages_as_committed(tmp_path / "out", committed, pages)


def test_the_333x777x4099_page_is_what_writeup_writes(tmp_path: Path) -> None:
    write_pages("--project", str(PROJECT), "writeup", str(RUNS / "sgemm-h200-333x777x4099"),
                "--format", "md", "--out", str(tmp_path))
    assert_pages_as_committed(tmp_path, ROOT / "reports" / "sgemm_333x777x4099",
                              ["index", "10_autotuned_333x777x4099"], suffixes=(".md",))
