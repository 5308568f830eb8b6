"""`ncuh report` against ncu's own `--page details --print-details all`, for every fixture.

ncu lays the page out from section files a report does not carry; ncuh rebuilds the parts it
can from the report's metrics (see harness/report/details_layout.py). What it prints must be
what ncu prints, block for block (a block: a section's header table, a titled body table, a
rule message); the sections it rebuilds completely must match ncu's page line for line up to
their rule messages.
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPORTS = [FIXTURES / "h100_sgemm_naive_smem.ncu-rep",
           *sorted((FIXTURES / "zoo").glob("*.ncu-rep"))]
_SECTION = re.compile(r"^    Section: (.+)$")
# sections whose header table and body tables ncuh prints in full
COMPLETE = ("GPU Speed Of Light Throughput", "GPU Speed Of Light Roofline Chart",
            *(f"GPU Speed Of Light Hierarchical Roofline Chart ({p} Precision)"
              for p in ("Double", "Half", "Single")),
            "Compute Workload Analysis", "Memory Workload Analysis",
            "Memory Workload Analysis Chart", "Memory Workload Analysis Tables",
            "Launch Statistics", "Scheduler Statistics", "Warp State Statistics",
            "Occupancy", "Instruction Statistics",
            "GPU Speed Of Light Hierarchical Roofline Chart (Tensor Core)",
            "GPU and Memory Workload Distribution", "NVLink Topology")
# sections whose header table ncuh prints in full (their body tables it does not rebuild)
HEADER_COMPLETE = ("PM Sampling",)


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


def _header(lines: list[str]) -> list[str]:
    """The section's first table (its header metrics)."""
    if not lines or not lines[0].startswith("    ---"):
        return []
    end = next(i for i in range(3, len(lines)) if lines[i].startswith("    ---"))
    return lines[: end + 1]


@pytest.fixture(scope="module", params=REPORTS, ids=lambda p: p.stem)
def pages(request):
    report = request.param
    details = report.with_name(report.name.replace(".ncu-rep", ".details.txt.gz"))
    with gzip.open(details, "rt") as handle:
        theirs = handle.read()
    # `ncuh report` in a fresh process, as a user runs it (through the one report model):
    # ncu_report answers a few derived metrics' units from state earlier reads left behind,
    # so reports other tests opened in this process must not decide them.
    ours = subprocess.run([sys.executable, "-m", "harness", "report", str(report),
                           "--print-details", "all"], capture_output=True, text=True,
                          check=True, timeout=300).stdout
    return _kernels(ours), _kernels(theirs)


def test_same_kernels_and_sections_in_ncu_order(pages):
    ours, theirs = pages
    assert list(ours) == list(theirs)
    for kernel, sections in ours.items():
        names = [n for n in theirs[kernel] if n in sections]
        assert list(sections) == names


def test_complete_sections_equal_ncu_line_for_line(pages):
    ours, theirs = pages
    for kernel, sections in theirs.items():
        for name in COMPLETE:
            assert _before_rules(ours[kernel][name]) == _before_rules(sections[name]), name
        for name in HEADER_COMPLETE:
            assert _header(ours[kernel][name]) == _header(sections[name]), name


# ncu's Source Counters header holds ~100 per-instruction aggregates ncuh does not rebuild;
# ncuh prints the four branch metrics of it, so its table is narrower than ncu's
PARTIAL_HEADER = ("Source Counters",)


def test_every_line_ncuh_prints_is_on_ncus_page(pages):
    ours, theirs = pages
    for kernel, sections in ours.items():
        for name, lines in sections.items():
            if name in PARTIAL_HEADER:
                lines = lines[len(_header(lines)):]
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

    report = str(REPORTS[0])
    header = CliRunner().invoke(main, ["report", report])
    full = CliRunner().invoke(main, ["report", report, "--print-details", "all"])
    assert header.exit_code == 0 and full.exit_code == 0
    assert "Table Name : Compute Throughput Breakdown" not in header.stdout
    assert "    Table Name : Compute Throughput Breakdown" in full.stdout
    assert "    Waves Per SM                                3.88" in header.stdout
    md = CliRunner().invoke(main, ["report", report, "--print-details", "all", "--format", "md"])
    assert "| SM: Inst Executed Pipe Lsu | % | 5.81 |" in md.stdout
