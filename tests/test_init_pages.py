"""The pages of the project `ncuh init` writes (reports/init/), from its committed H200 run
(reports/runs/init-h200, reports packed with xz): what `ncuh writeup` writes from the run, each
page's bound and main finding, and no sentence the report contradicts."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_folder
from pages_support import assert_pages_as_committed, unpacked_copy, write_pages

from harness.cli import main
from harness.findings.oracle import contradictions, page_contradictions
from harness.pages.writeup import Writeup, collect

ROOT = Path(__file__).resolve().parent.parent
PACKED_RUN = ROOT / "reports" / "runs" / "init-h200"
PAGES = ROOT / "reports" / "init"
SLUGS = ["00_naive_16777216", "01_vectorized_16777216"]


@functools.cache
def _unpacked() -> tuple[Path, Path]:
    """(the run with its reports unpacked, the project `ncuh init` writes), once per process."""
    folder = Path(tempfile.mkdtemp(prefix="init-pages-", dir=run_folder()))
    run = unpacked_copy(PACKED_RUN, folder)
    result = CliRunner().invoke(main, ["init", str(folder / "my-kernels")])
    assert result.exit_code == 0, result.output
    return run, folder / "my-kernels"


@functools.cache
def writeup() -> Writeup:
    run, project = _unpacked()
    return collect([run], project=project)


def test_the_committed_pages_are_what_writeup_writes(tmp_path: Path) -> None:
    run, project = _unpacked()
    write_pages("--project", str(project), "writeup", str(run), "--out", str(tmp_path))
    assert_pages_as_committed(tmp_path, PAGES, ["index", *SLUGS])


@pytest.mark.parametrize("slug,bound,first", [
    ("00_naive_16777216", "The kernel is memory-bound (L2), and the biggest problem is this: "
     "memory instructions are not vectorized", "vectorization"),
    ("01_vectorized_16777216", "The kernel runs at the limit: 3,691.1 GB/s, 100.0% of the "
     "device copy's 3,690.5 GB/s", "stalls"),
])
def test_each_pages_bound_and_main_finding(slug: str, bound: str, first: str) -> None:
    [page] = [p for p in writeup().pages if p.slug == slug]
    assert page.tldr.startswith(bound)
    assert page.findings[0].rule == first


@pytest.mark.parametrize("slug", SLUGS)
def test_no_sentence_of_a_page_is_contradicted(slug: str) -> None:
    pages = writeup().pages
    [page] = [p for p in pages if p.slug == slug]
    assert page.profile is not None
    assert page_contradictions(page.profile, page.tldr, len(page.fix_ideas),
                               page.pct_of_limit) == []
    previous = next((p.profile for p in pages if p.slug == page.previous_slug), None)
    assert contradictions(page.profile, [*page.findings, *page.good], previous) == []
