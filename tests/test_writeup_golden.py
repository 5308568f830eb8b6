"""Golden Markdown pages from the real fixture report.

The pages are compared byte for byte with tests/golden/writeup_fixture/. After an intended
change to the rules or templates, regenerate them with
`NCUH_UPDATE_GOLDEN=1 pytest tests/test_writeup_golden.py` and review the diff.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from packed_fixtures import NAIVE_SMEM_REPORT, REDUCTION_RUN

from harness.project.locate import default_project_path

REPORT = NAIVE_SMEM_REPORT
GOLDEN = Path(__file__).parent / "golden" / "writeup_fixture"
PAGES = ("index.md", "h100_sgemm_naive_smem_0_sgemm_naive.md",
         "h100_sgemm_naive_smem_1_sgemm_smem.md")


def _writeup(out: Path, *args: object) -> None:
    """`ncuh writeup` in a fresh process, as a user runs it: ncu_report fixes a derived metric's
    unit by the first report a process opens, and other tests open other reports first."""
    subprocess.run([sys.executable, "-m", "harness", "writeup", *map(str, args), "--out",
                    str(out), "--format", "md"], check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("writeup")
    # the bundled project named as --project names it: its reference heads the index
    _writeup(out, REPORT, "--project", default_project_path())
    return out


@pytest.mark.parametrize("name", PAGES)
def test_markdown_matches_golden(rendered: Path, name: str):
    produced = (rendered / name).read_text(encoding="utf-8")
    golden = GOLDEN / name
    if os.environ.get("NCUH_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(produced, encoding="utf-8")
    assert produced == golden.read_text(encoding="utf-8")


def test_markdown_plots_are_written_beside_the_index(rendered: Path):
    for name in ("gflops", "stalls", "roofline", "occupancy"):
        png = (rendered / "plots" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert f"(plots/{name}.png)" in (rendered / "index.md").read_text(encoding="utf-8")


def test_page_carries_the_seed_sections_and_real_numbers(rendered: Path):
    page = (rendered / "h100_sgemm_naive_smem_1_sgemm_smem.md").read_text(encoding="utf-8")
    headings = [line for line in page.splitlines() if line.startswith("### ")]
    assert headings == ["### Benchmark Results", "### What's Good?", "### What's Bad?",
                        "### In-Depth Findings", "### In-Depth Fix Ideas", "### Instruction Mix",
                        "### Profiling Results", "### Bonus Observations"]
    # numbers ncu prints for this kernel
    assert "0.300928 ms" in page  # gpu__time_duration.sum 300,928 ns
    assert "21.4 cycles per issued instruction" in page  # MIO throttle, CPIStall rule
    # SharedMemoryConflicts' 279,780 store conflicts, which the Source Counters (each STS at
    # its ideal wavefronts) do not put on any instruction's addresses
    assert "counts 279,780 store bank conflicts (11.8% of its wavefronts)" in page
    assert "Duration                         us       300.93" in page  # the details table
    # the hottest instruction: CPIStall "responsible for 15.1% of all warp stalls. 78.5% of
    # the stalls for this line are of type long_scoreboard"
    assert "| 1 | 0x0330 | STS \\[R16\\], R27 | 4,485 | 15.1% | long_scoreboard (3,522)" in page
    # a plain report: no Strategy and no Speedup Factors
    assert "### Strategy" not in page and "Speedup Factors" not in page


def test_fix_ideas_point_at_their_findings(rendered: Path):
    page = (rendered / "h100_sgemm_naive_smem_0_sgemm_naive.md").read_text(encoding="utf-8")
    ideas = page.split("### In-Depth Fix Ideas", 1)[1].split("### Profiling Results", 1)[0]
    assert ideas.count("*What if") == ideas.count("(Finding ") >= 2
    # each with the counters that say it fits
    assert ideas.count("It fits because") == ideas.count("*What if")


# The reduction chain's warp_shuffle page and the chain's index: the page with every part this
# fixture lacks (a previous iteration, source listings, ncu results set aside, GB/s).
RUN = REDUCTION_RUN
PROJECT = Path(__file__).parent.parent / "kernels" / "reduction"
CHAIN_GOLDEN = Path(__file__).parent / "golden" / "writeup_reduction"
CHAIN_PAGES = ("index.md", "07_warp_shuffle_67108864.md")


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("chain")
    _writeup(out, RUN, "--project", PROJECT)
    return out


@pytest.mark.parametrize("name", CHAIN_PAGES)
def test_chain_markdown_matches_golden(chain: Path, name: str):
    produced = (chain / name).read_text(encoding="utf-8")
    golden = CHAIN_GOLDEN / name
    if os.environ.get("NCUH_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(produced, encoding="utf-8")
    assert produced == golden.read_text(encoding="utf-8")


def test_the_speedup_heading_names_the_size_by_its_dims() -> None:
    from harness.pages.writeup import size_heading

    assert size_heading("67108864", ("n",)) == "n = 2^26"
    assert size_heading("67108863", ("n",)) == "n = 67108863"
    assert size_heading("1024x2048x512", ("M", "N", "K")) == "M = 1024, N = 2048, K = 512"
    assert size_heading("4096", ()) == "size 4096"  # no dims known: the size as written
    assert size_heading(None, ("n",)) == "size ?"
