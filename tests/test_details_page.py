"""`ncuh report` against ncu's own `--page details --print-details all`, for every fixture.

ncu lays the page out from section files a report does not carry; ncuh rebuilds it from the
report's metrics (see harness/report/details_layout.py). What it prints must be what ncu
prints, line for line and byte for byte, except the line naming the profiled process
("[499] python3.12@127.0.0.1"), which ncu reads from a part of the report that ncu_report's
Python API does not expose, and, for kernels launched inside NVTX ranges, ncu's "NVTX
Push/Pop Stack for Thread N:" block after the kernel headline: ncu_report's NVTX API
(action.nvtx_state(): domains, push/pop ranges) names no thread, so ncuh prints no block.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from packed_fixtures import NAIVE_SMEM_REPORT, PAGES_OF, ncu_page, reports

FIXTURES = Path(__file__).parent / "fixtures"
SGEMM = NAIVE_SMEM_REPORT
# every fixture report with ncu's details page beside it (committed packed: `packed_fixtures`),
# and the sample runs of reports/ whose details page is among the fixtures: `packed_fixtures`
REPORTS = [report for report in [*reports(FIXTURES), *reports(FIXTURES / "zoo"), *PAGES_OF]
           if ncu_page(report, ".details.txt").exists()]
_SECTION = re.compile(r"^    Section: (.+)$")
# ncu's line naming the profiled process ([pid] executable@host): not in ncu_report's API
_PROCESS = re.compile(r"^\[\d+\] \S+@\S+$")
# ncu's NVTX stack block after a kernel headline (a blank line, the title naming the thread,
# then the domains and their ranges): ncu_report's INvtxState, INvtxDomainInfo and INvtxRange
# carry no thread id (ncu 2025.3.1), so ncuh leaves the block out and the tests skip it
_NVTX_STACK = re.compile(r"\n\n    NVTX Push/Pop Stack for Thread \d+:\n(?:      .*\n)*")


def _without_nvtx_stack(text: str) -> str:
    return _NVTX_STACK.sub("\n", text)


# sections whose header table, body tables and rule messages ncuh prints in full (every
# section of the fixtures' pages)
COMPLETE = ("GPU Speed Of Light Throughput", "GPU Speed Of Light Roofline Chart",
            *(f"GPU Speed Of Light Hierarchical Roofline Chart ({p} Precision)"
              for p in ("Double", "Half", "Single")),
            "Compute Workload Analysis", "Memory Workload Analysis",
            "Memory Workload Analysis Chart", "Memory Workload Analysis Tables",
            "Launch Statistics", "Scheduler Statistics", "Warp State Statistics",
            "Occupancy", "Instruction Statistics",
            "GPU Speed Of Light Hierarchical Roofline Chart (Tensor Core)",
            "GPU and Memory Workload Distribution", "NVLink Topology", "PM Sampling",
            "Source Counters", "NUMA Affinity", "Command line profiler metrics")


def _kernels(text: str) -> dict[str, dict[str, list[str]]]:
    """kernel headline -> section name -> its lines (trailing blanks stripped)."""
    kernels: dict[str, dict[str, list[str]]] = {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        line = line.rstrip()
        if line.startswith("  ") and not line.startswith("   ") and " CC " in line:
            sections = kernels.setdefault(line.strip(), {})
            current = None
        elif match := _SECTION.match(line):
            current = sections.setdefault(match.group(1), [])
        elif current is not None:
            current.append(line)
    return kernels


def _before_rules(lines: list[str]) -> list[str]:
    """The section's tables: everything before its first rule message."""
    out = []
    for line in lines:
        if re.match(r"^    (OPT|INF|WRN|ERR) ", line):
            break
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


@functools.cache
def _all_texts() -> dict[Path, tuple[str, str]]:
    """Every report's pages, the `ncuh report` processes run side by side (one per core)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(REPORTS, pool.map(_read_texts, REPORTS), strict=True))


def _texts(report: Path) -> tuple[str, str]:
    return _all_texts()[report]


def _read_texts(report: Path) -> tuple[str, str]:
    """(ncuh's page, ncu's page) of a report."""
    theirs = _without_nvtx_stack(ncu_page(report, ".details.txt").read_text(encoding="utf-8"))
    # `ncuh report` in a fresh process, as a user runs it (through the one report model):
    # ncu_report answers a few derived metrics' units from state earlier reads left behind,
    # so reports other tests opened in this process must not decide them.
    ours = subprocess.run([sys.executable, "-m", "harness", "report", str(report),
                           "--print-details", "all"], capture_output=True, text=True,
                          check=True, timeout=300).stdout
    return ours, theirs


@pytest.fixture(scope="module", params=REPORTS, ids=lambda p: ncu_page(p, "").name)
def pages(request):
    ours, theirs = _texts(request.param)
    return _kernels(ours), _kernels(theirs)


def reproduced(ours: str, theirs: str) -> tuple[int, list[str]]:
    """How many of ncu's lines ncuh prints, in ncu's order and byte for byte (trailing
    spaces included), and ncu's lines it does not."""
    theirs_lines, ours_lines = theirs.splitlines(), ours.splitlines()
    # the lines both pages end with match as they stand; the matcher (quadratic on a page of
    # thousands of lines) looks only at what comes before them
    shared = min(len(theirs_lines), len(ours_lines))
    tail = 0
    while tail < shared and theirs_lines[-1 - tail] == ours_lines[-1 - tail]:
        tail += 1
    head_theirs, head_ours = theirs_lines[:len(theirs_lines) - tail], \
        ours_lines[:len(ours_lines) - tail]
    matcher = difflib.SequenceMatcher(None, head_theirs, head_ours, autojunk=False)
    kept = [False] * len(head_theirs) + [True] * tail
    for block in matcher.get_matching_blocks():
        kept[block.a:block.a + block.size] = [True] * block.size
    return sum(kept), [line for line, k in zip(theirs_lines, kept, strict=True) if not k]


def test_every_zoo_report_and_the_sgemm_report_are_compared():
    assert len(REPORTS) >= 13
    assert SGEMM in REPORTS


def test_ncus_lines_reproduced_over_all_fixtures():
    """Every line of ncu's pages but the process line (and the NVTX stack blocks, skipped),
    over all fixtures: 87,117 of 87,134 lines (99.98%) at the last count; the 17 left are the
    pages' process lines."""
    total = matched = 0
    missing: list[str] = []
    for report in REPORTS:
        ours, theirs = _texts(report)
        count, lost = reproduced(ours, theirs)
        matched += count
        total += len(theirs.splitlines())
        missing += lost
    assert [line for line in missing if not _PROCESS.match(line)] == []
    assert matched / total >= 1 - len(REPORTS) / total


def test_page_equals_ncus_but_its_process_line(pages):
    ours, theirs = pages
    assert ours == theirs


def test_nvtx_stack_block_is_what_is_skipped():
    page = ("  k (1, 1, 1)x(1, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n\n"
            "    NVTX Push/Pop Stack for Thread 6522:\n      <default domain>\n"
            "        <0,ncuh-register_tiled_1024>\n    Section: Occupancy\n")
    assert _without_nvtx_stack(page) == (
        "  k (1, 1, 1)x(1, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n    Section: Occupancy\n")


def test_reproduced_counts_ncus_lines_in_order():
    assert reproduced("a\nb\nc\n", "a\nb\nc\n") == (3, [])
    assert reproduced("a\nc\n", "[1] p@h\na\nb\nc\n") == (2, ["[1] p@h", "b"])
    assert reproduced("b\na\n", "a\nb\n")[0] == 1  # out of order: one of the two
    assert reproduced("a  \n", "a\n") == (0, ["a"])  # byte for byte


def test_same_kernels_and_sections_in_ncu_order(pages):
    ours, theirs = pages
    assert list(ours) == list(theirs)
    for kernel, sections in ours.items():
        names = [n for n in theirs[kernel] if n in sections]
        assert list(sections) == names


def test_complete_sections_equal_ncu_line_for_line(pages):
    ours, theirs = pages
    for kernel, sections in theirs.items():
        assert set(sections) <= set(COMPLETE)
        # every section of ncu's page (the --metrics one only on pages profiled with it)
        for name in sections:
            assert _before_rules(ours[kernel].get(name, [])) == _before_rules(sections[name]), name


def test_every_line_ncuh_prints_is_on_ncus_page(pages):
    ours, theirs = pages
    for kernel, sections in ours.items():
        for name, lines in sections.items():
            # in ncu's order: each of our lines is found after the previous one
            remaining = iter(theirs[kernel][name])
            for line in lines:
                assert any(line == t for t in remaining), f"{name}: {line!r}"


def test_rule_messages_equal_ncu_blocks(pages):
    ours, theirs = pages
    for kernel, sections in theirs.items():
        for name, lines in sections.items():
            first = next((i for i, line in enumerate(lines)
                          if re.match(r"^    (OPT|INF|WRN|ERR) ", line)), None)
            if first is None:
                continue
            assert ours[kernel][name][-(len(lines) - first):] == lines[first:], name


def test_tensor_roofline_paths_are_titled_as_ncu_titles_them():
    from harness.report.details_layout import tensor_variant_title

    assert tensor_variant_title("op_hgmma_src_bf16_dst_fp32_sparsity_off") == (
        "Op:hgmma Src:bf16 Dst:fp32 Sparsity:off")
    assert tensor_variant_title("src_int8") == "Src:int8"


def test_body_tables_sort_as_ncu_reads_printed_values():
    from harness.report.report_view import sort_value

    assert sort_value("16.22") == 16.22
    assert sort_value("1,215.00") == 1.0  # ncu stops reading at the thousands separator
    assert sort_value("(!) n/a") is None


def test_instance_lists_wrap_as_ncu_wraps_them():
    from harness.report.report_view import wrap_list

    # from ncu's Occupancy page: 29 columns on the first and last line, 28 in between
    assert wrap_list("8,524 (100; 100; 100; 100; 100; 100; 100; 100; 100; 100; 100; 12)") == [
        "8,524 (100; 100; 100; 100;", "100; 100; 100; 100; 100;", "100; 100; 12)"]
    # a 29-column line stays when it ends the list
    assert wrap_list("1 (100; 100; 100; 100; 100; 100; 100; 100; 100; 100; 123)") == [
        "1 (100; 100; 100; 100; 100;", "100; 100; 100; 100; 100; 123)"]


def test_cli_print_details_all_adds_the_body_tables():
    from click.testing import CliRunner

    from harness.cli import main

    report = str(SGEMM)
    header = CliRunner().invoke(main, ["report", report])
    full = CliRunner().invoke(main, ["report", report, "--print-details", "all"])
    assert header.exit_code == 0 and full.exit_code == 0
    assert "Table Name : Compute Throughput Breakdown" not in header.stdout
    assert "    Table Name : Compute Throughput Breakdown" in full.stdout
    assert "    Waves Per SM                                3.88" in header.stdout
    md = CliRunner().invoke(main, ["report", report, "--print-details", "all", "--format", "md"])
    assert "| SM: Inst Executed Pipe Lsu | % | 5.81 |" in md.stdout


def test_rule_lines_padded_as_ncu_pads_them_only_on_the_report_page():
    from harness.report.report_view import render_text, render_view, report_views

    views = report_views(SGEMM)
    padded = [line for line in render_view(views, "text").splitlines() if line.endswith(" ")]
    assert padded and all(len(line) == 120 for line in padded)  # ncu's width, every one
    # pages that embed the view (writeup) keep no trailing spaces
    assert not [line for line in render_text(views).splitlines() if line.endswith(" ")]


def test_long_words_break_at_the_width_keeping_the_breaking_space():
    from harness.report.report_view import RULE_WRAP, _wrap_rule_message

    url = "(https://example.com/" + "x" * 100 + "-ab)"
    lines = _wrap_rule_message(f"The Guide {url} has an example.")
    # the long word starts a line of its own, broken at the width; that line keeps the
    # breaking space before it, the next goes on with the rest of the word
    assert lines == ["The Guide", " " + url[:RULE_WRAP], url[RULE_WRAP:] + " has an example."]
