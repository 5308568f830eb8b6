"""`ncuh report` shows what ncu's details page shows: same labels, units, values and rules."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest
from click.testing import CliRunner
from ncu_details import DetailsSection, parse_details
from packed_fixtures import NAIVE_SMEM_DETAILS, NAIVE_SMEM_REPORT

from harness.cli import main
from harness.report.ncu_format import display, scale_unit
from harness.report.report_view import KernelView, render_text

# ncu prints this row with unit "%", but the metric (a ratio) has no unit in the report and
# the section's header list does not carry a display unit: the one known difference.
KNOWN_UNIT_DIFFERENCES = {("Memory Workload Analysis", "L2 Compression Ratio")}


@pytest.fixture(scope="module")
def views() -> list[KernelView]:
    # Read in a fresh process, as `ncuh report` is: ncu_report keeps a derived metric's unit
    # from the first report a process opens, and other tests here open `pages` reports first.
    script = ("import pickle, sys; from harness.report.report_view import report_views; "
              "sys.stdout.buffer.write(pickle.dumps(report_views(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-c", script, str(NAIVE_SMEM_REPORT)],
                          capture_output=True, check=True, timeout=120)
    return pickle.loads(done.stdout)


@pytest.fixture(scope="module")
def details() -> dict[str, list[DetailsSection]]:
    return parse_details(NAIVE_SMEM_DETAILS)


def test_ncu_display_formatting() -> None:
    assert display(5511008.0, "ns") == ("5.51", "ms")
    assert display(300928.0, "ns") == ("300.93", "us")
    assert display(2618985129.4, "hz") == ("2.62", "Ghz")
    assert display(8762457.0, "cycle") == ("8,762,457", "cycle")
    assert display(8491270.674, "cycle") == ("8,491,270.67", "cycle")
    assert display(100.0, "%") == ("100", "%")
    assert display(8192, "byte") == ("8.19", "Kbyte")
    assert display(0, "byte/block") == ("0", "byte/block")
    assert display(1280.0, "byte/cycle") == ("1.28", "Kbyte/cycle")
    assert display("CachePreferNone", "") == ("CachePreferNone", "")
    assert scale_unit(1518766439.8, "sector/s") == pytest.approx((1.5187664398, "sector/ns"))


def test_report_header_rows_equal_ncu_details_page(views, details) -> None:
    for view in views:
        theirs = {section.name: section for section in details[view.name]}
        compared = 0
        for section in view.sections:
            assert section.name in theirs, f"{view.name}: ncu has no section {section.name}"
            for row in section.rows:
                assert row.label in theirs[section.name].header, (section.name, row.label)
                unit, value = theirs[section.name].header[row.label]
                assert row.value == value, (section.name, row.label, row.value, value)
                if (section.name, row.label) not in KNOWN_UNIT_DIFFERENCES:
                    assert row.unit == unit, (section.name, row.label, row.unit, unit)
                compared += 1
        assert compared >= 80, f"{view.name}: only {compared} rows compared"


def test_report_sections_follow_ncu_order(views, details) -> None:
    for view in views:
        ncu_order = [section.name for section in details[view.name]]
        mine = [section.name for section in view.sections]
        assert mine == [name for name in ncu_order if name in mine]
        assert mine[0] == "GPU Speed Of Light Throughput"


def test_report_rule_lines_equal_ncu_details_page(views, details) -> None:
    """Each rule renders exactly as ncu wraps it: tag, speedup heading, message lines."""
    text = render_text(views)
    for view in views:
        theirs = {section.name: section for section in details[view.name]}
        rules = 0
        for section in view.sections:
            expected = theirs[section.name].raw_rule_lines
            assert len(section.rules) == len(expected), section.name
            for rule, ncu_lines in zip(section.rules, expected, strict=True):
                block = "\n".join(
                    [f"    {rule.tag:<5} {ncu_lines[0]}"]
                    + [f"          {line}" for line in ncu_lines[1:]]
                )
                assert block in text, f"{section.name}: {rule.name} renders differently"
                rules += 1
        assert rules >= 9


def test_report_headline_names_launch(views) -> None:
    assert views[0].headline == (
        "sgemm_naive (32, 32, 1)x(32, 32, 1), Context 1, Stream 7, Device 0, CC 9.0"
    )
    assert views[1].headline.startswith("sgemm_smem (32, 32, 1)x(1024, 1, 1)")


def test_cli_report_text_md_json() -> None:
    runner = CliRunner()
    text = runner.invoke(main, ["report", str(NAIVE_SMEM_REPORT), "--kernel", "regex:naive"])
    assert text.exit_code == 0, text.output
    assert "  sgemm_naive (32, 32, 1)x(32, 32, 1)" in text.stdout
    assert "sgemm_smem" not in text.stdout
    assert "    Duration                         ms         5.51" in text.stdout
    assert "    OPT   Est. Speedup: 36.04%" in text.stdout  # uncoalesced global accesses

    md = runner.invoke(main, ["report", str(NAIVE_SMEM_REPORT), "--format", "md"])
    assert md.exit_code == 0, md.output
    assert "### GPU Speed Of Light Throughput" in md.stdout
    assert "| Duration | ms | 5.51 |" in md.stdout
    assert "**OPT** (Est. Speedup: 10.64%)" in md.stdout  # shared store bank conflicts

    js = runner.invoke(main, ["report", str(NAIVE_SMEM_REPORT), "--format", "json"])
    assert js.exit_code == 0, js.output
    data = json.loads(js.stdout)
    assert data["schema"] == "ncuh.report/1"
    assert [k["name"] for k in data["kernels"]] == ["sgemm_naive", "sgemm_smem"]
    sol = data["kernels"][0]["sections"][0]
    duration = next(r for r in sol["rows"] if r["metric"] == "gpu__time_duration.sum")
    assert duration["raw_value"] == 5511008.0 and duration["raw_unit"] == "ns"
    assert duration["value"] == "5.51" and duration["unit"] == "ms"
