"""The three renderings of a diff: Markdown job summary, JSON schema ncuh.diff/1, JUnit XML."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.diff.compare import DiffResult, diff_runs
from harness.diff.inputs import Environment, KernelData, KernelKey, Side
from harness.diff.json_output import SCHEMA, render_json, to_dict
from harness.diff.junit import render_junit
from harness.diff.markdown import MAX_BYTES, render_markdown


@pytest.fixture(scope="module")
def regression() -> DiffResult:
    return diff_runs(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, pairs=["sgemm_smem=sgemm_naive"])


def _side(name: str, kernels: list[KernelData]) -> Side:
    return Side(path=Path(name), kind="run", environment=Environment("GPU", "9.0", "2025.3.1"),
                kernels=tuple(kernels))


def _many(count: int, slowdown: float, name: str = "k",
          bench: bool = True) -> tuple[Side, Side]:
    """`count` kernels with long names, every other one `slowdown` times slower: timed by
    bench samples, or (bench=False, fast) by ncu's single duration."""
    rng = np.random.default_rng(0)
    base, cur = [], []
    for i in range(count):
        key = KernelKey(f"{name}_{i:05d}_" + "x" * 150, (4096, 4096, 4096))
        factor = slowdown if i % 2 else 1.0
        b = tuple(1.0 + 0.01 * rng.standard_normal(10)) if bench else ()
        c = tuple(s * factor for s in b[::-1])
        metrics = {"launch__registers_per_thread": 32.0, "gpu__time_duration.sum": 1e6}
        cur_metrics = {**metrics, "gpu__time_duration.sum": 1e6 * factor}
        base.append(KernelData(key, "f", "r.ncu-rep", metrics=metrics, samples_ms=b))
        cur.append(KernelData(key, "f", "r.ncu-rep", metrics=cur_metrics, samples_ms=c))
    return _side("base", base), _side("cur", cur)


def test_markdown_starts_with_one_status_line_then_a_severity_sorted_table(
        regression: DiffResult, golden) -> None:
    page = render_markdown(regression)
    first, second = page.splitlines()[:2]
    assert first.startswith("❌ ncuh diff: REGRESSION in 1 of 1 kernel: sgemm_naive")
    assert second == ""
    assert page.count("<details>") == page.count("</details>") == 1
    # the table row (300.9 us → 5.511 ms, +1731.3%) and the details that explain it
    golden("regression_page", page)

    base, cur = _many(6, 1.10)
    rows = [line for line in render_markdown(diff_runs(base, cur)).splitlines()
            if line.startswith(("| 🔴", "| ⚪"))]
    verdicts = [row.split("|")[1].strip().split()[-1] for row in rows]
    assert verdicts == ["SLOWER"] * 3 + ["SAME"] * 3


def test_markdown_stays_under_one_mebibyte_and_says_what_it_left_out() -> None:
    base, cur = _many(6000, 1.10, bench=False)
    result = diff_runs(base, cur)
    page = render_markdown(result)
    assert len(page.encode("utf-8")) <= MAX_BYTES < 1024 * 1024
    assert page.splitlines()[0].startswith("❌ ncuh diff: REGRESSION in 3000 of 6000 kernels")
    assert "Truncated to stay under GitHub's 1 MiB summary limit" in page
    small = render_markdown(result, max_bytes=20_000)
    assert len(small.encode("utf-8")) <= 20_000
    assert "`ncuh diff --format json` has everything" in small


def test_markdown_escapes_kernel_names() -> None:
    base, cur = _many(2, 1.10, name="<script>alert(1)</script>")
    page = render_markdown(diff_runs(base, cur))
    # Markdown text escapes it, the <details> summary (an HTML block) HTML-escapes it
    assert re.search(r"(?<!\\)<script>", page) is None  # only the escaped \<script> is there
    assert "\\<script>" in page and "&lt;script&gt;" in page


def test_json_follows_schema_ncuh_diff_1(regression: DiffResult) -> None:
    data = json.loads(render_json(regression))
    assert data["schema"] == SCHEMA == "ncuh.diff/1"
    assert (data["status"], data["exit_code"]) == ("regression", 1)
    assert data["summary"] == {"kernels": 1, "slower": 1, "faster": 0, "same": 0, "unsure": 0,
                               "added": 1, "removed": 1, "failed": 0}
    assert data["baseline"]["environment"] == {"gpu": "NVIDIA H100 80GB HBM3",
                                               "compute_capability": "9.0", "ncu_version": None}
    (kernel,) = data["kernels"]
    assert kernel["key"] == {"name": "sgemm_naive", "size": None, "ordinal": 0}
    metric = kernel["metrics"][0]
    assert set(metric) >= {"key", "label", "kind", "direction", "verdict", "baseline",
                           "current", "unit", "change_pct", "threshold_pct", "source", "note"}
    assert set(kernel["explanation"]) == {"summary", "counters", "stalls", "occupancy", "rules",
                                          "notes"}
    assert data["thresholds"]["metrics"]["time"]["threshold_pct"] == 3.0
    assert data["added"] == [{"key": {"name": "sgemm_smem", "size": None, "ordinal": 0},
                              "function": "sgemm_smem", "source": NAIVE_SMEM_REPORT.name}]


def test_json_of_a_bench_diff_carries_the_statistics() -> None:
    base, cur = _many(2, 1.10)
    data = to_dict(diff_runs(base, cur))
    stats = data["kernels"][0]["metrics"][0]["statistics"]
    assert stats["method"] == "bootstrap+mann-whitney"
    assert stats["n_baseline"] == stats["n_current"] == 10
    assert stats["ci_low_pct"] > 3.0 and stats["p_value"] < 0.01


def test_junit_parses_and_has_a_failure_per_regressed_metric(regression: DiffResult) -> None:
    root = ET.fromstring(render_junit(regression))
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["sgemm_naive", "sgemm_smem", "sgemm_naive"]
    failures = cases[0].findall("failure")
    # duration, instructions executed, L2 bytes got worse
    assert [f.get("message").split(" +")[0] for f in failures] == \
        ["duration", "instructions executed", "L2 bytes"]
    assert failures[0].text.startswith("duration +1731%: global-load L1 sectors")
    assert [c.find("skipped").get("message").split(":")[0] for c in cases[1:]] == \
        ["added", "removed"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "2")


def test_junit_of_a_clean_diff_has_no_failure() -> None:
    root = ET.fromstring(render_junit(diff_runs(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT)))
    assert len(root.findall(".//testcase")) == 2
    assert root.findall(".//failure") == []


def _rows(page: str) -> dict[str, list[str]]:
    """The details table of a one-kernel page: metric label -> its cells."""
    rows = [line.strip("|").split(" | ") for line in page.splitlines()
            if line.startswith("| ") and line.count("|") == 8]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows}


def test_counter_rows_say_worse_or_better_and_time_keeps_slower() -> None:
    faster = diff_runs(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, pairs=["sgemm_naive=sgemm_smem"])
    rows = _rows(render_markdown(faster))
    assert rows["duration"][0] == "FASTER"
    assert rows["shared memory per block"][:3] == ["WORSE", "0 B", "8,192 B"]
    assert rows["instructions executed"][0] == "BETTER"
    (kernel,) = to_dict(faster)["kernels"]
    by_key = {m["key"]: m for m in kernel["metrics"]}
    # the JSON keeps its verdicts (the gate reads them) and adds the shown word
    assert (by_key["shared_memory"]["verdict"], by_key["shared_memory"]["word"]) \
        == ("SLOWER", "WORSE")
    assert (by_key["time"]["verdict"], by_key["time"]["word"]) == ("FASTER", "FASTER")


def test_a_counter_judged_same_despite_moving_says_why(regression: DiffResult) -> None:
    (kernel,) = regression.kernels
    notes = {m.key: (m.verdict, m.note) for m in kernel.metrics}
    assert notes["dram_read_bytes"] == ("SAME", "below min_abs 1 MiB")  # 12,587,776 -> 12,592,896
    assert notes["shared_load_bank_conflicts"] == ("SAME", "below min_abs 32768")  # 29,073 -> 0
    assert notes["registers"] == ("SAME", "")  # unchanged: nothing to explain
    assert notes["shared_store_bank_conflicts"] == ("FASTER", "")  # 279,780 -> 0: over both


def test_byte_counts_under_10_kib_are_exact_and_carry_their_unit() -> None:
    from harness.diff.formatting import quantity

    assert quantity(1024, "B") == "1,024 B"
    assert quantity(10 * 1024 - 1, "B") == "10,239 B"
    assert quantity(10 * 1024, "B") == "10.2 KB"
    assert quantity(262_144, "B") == "262.1 KB" and quantity(12_582_912, "B") == "12.6 MB"
    assert quantity(2.5e12, "B") == "2.5 TB" and quantity(-12_582_912, "B") == "-12.6 MB"
    assert quantity(1024, "") == "1.02K" and quantity(262_144, "sector") == "262.1K sector"


def test_times_side_by_side_keep_four_significant_figures() -> None:
    from harness.diff.formatting import quantity

    assert f"{quantity(5_511_008, 'ns')} → {quantity(5_510_000, 'ns')}" == "5.511 ms → 5.510 ms"
    assert quantity(324_000, "ns") == "324.0 us"
    assert quantity(999_999, "ns") == "1000 us"  # no trailing point
    assert quantity(1_000_000, "ns") == "1.000 ms"
    assert quantity(0, "ns") == "0 ns"
    assert quantity(0.3009, "ms") == "300.9 us"


def test_the_status_line_has_no_markdown_escape_for_a_hash() -> None:
    base, cur = _many(2, 1.10, name="reduce_sequential #1", bench=False)
    page = render_markdown(diff_runs(base, cur))
    assert "reduce_sequential #1" in page.splitlines()[0]
    assert "\\#" not in page.splitlines()[0]
