"""`ncuh diff` on the real H100 fixture report and on run directories built from it."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from diff_rundirs import make_run, samples
from packed_fixtures import NAIVE_SMEM_RAW_CSV, NAIVE_SMEM_REPORT

from harness.diff.compare import diff_runs


def ncuh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "diff", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def raw_value(metric: str, kernel: str) -> float:
    """A value from ncu's own `--page raw --csv` output beside the fixture."""
    with NAIVE_SMEM_RAW_CSV.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    column = rows[0].index(metric)
    row = next(r for r in rows[2:] if r[rows[0].index("Kernel Name")] == kernel)
    return float(row[column].replace(",", ""))


def test_report_against_itself_is_all_same_and_exits_0() -> None:
    result = diff_runs(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT)
    assert [k.key.name for k in result.kernels] == ["sgemm_naive", "sgemm_smem"]
    assert {k.verdict for k in result.kernels} == {"SAME"}
    assert all(m.verdict == "SAME" for k in result.kernels for m in k.metrics)
    assert result.exit_code == 0 and not result.added and not result.removed
    completed = ncuh(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("✅ ncuh diff: no regression in 2 kernels: 2 same")


def test_paired_smem_to_naive_is_a_regression_explained_by_its_counters(golden) -> None:
    result = diff_runs(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, pairs=["sgemm_smem=sgemm_naive"])
    assert result.exit_code == 1
    assert [k.key.name for k in result.added] == ["sgemm_smem"]
    assert [k.key.name for k in result.removed] == ["sgemm_naive"]
    (kernel,) = result.kernels
    assert kernel.verdict == "SLOWER"
    metrics = {m.key: m for m in kernel.metrics}
    # the numbers are ncu's own (raw page beside the fixture)
    assert metrics["time"].baseline == raw_value("gpu__time_duration.sum", "sgemm_smem") * 1e6
    assert metrics["time"].current == raw_value("gpu__time_duration.sum", "sgemm_naive") * 1e6
    assert metrics["instructions"].baseline == raw_value("smsp__inst_executed.sum", "sgemm_smem")
    assert metrics["instructions"].current == raw_value("smsp__inst_executed.sum", "sgemm_naive")
    assert metrics["instructions"].verdict == "SLOWER"
    assert metrics["shared_store_bank_conflicts"].baseline == 279780
    assert metrics["shared_store_bank_conflicts"].verdict == "FASTER"
    explanation = kernel.explanation
    assert explanation is not None
    # duration +1731%: global-load L1 sectors 8.52M -> 1.11G, LG throttle +393.0 cycles, ncu's
    # rules that came and went
    golden("smem_to_naive_explanation", "\n".join([explanation.summary, *explanation.lines()]))


def test_paired_naive_to_smem_is_faster_and_shows_the_bank_conflicts_it_traded(golden) -> None:
    completed = ncuh(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, "--pair", "sgemm_naive=sgemm_smem",
                     "--format", "json")
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    (kernel,) = data["kernels"]
    assert kernel["verdict"] == "FASTER"
    assert kernel["baseline_function"] == "sgemm_naive"
    assert kernel["current_function"] == "sgemm_smem"
    metrics = {m["key"]: m for m in kernel["metrics"]}
    assert metrics["time"]["change_pct"] == pytest.approx(100 * (300928 / 5511008 - 1))
    conflicts = metrics["shared_store_bank_conflicts"]
    assert (conflicts["verdict"], conflicts["baseline"], conflicts["current"]) == \
        ("SLOWER", 0.0, raw_value("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                                  "sgemm_smem"))
    assert conflicts["change_pct"] is None  # a change from zero has no percentage
    golden("naive_to_smem_rules", "\n".join(m["text"] for m in kernel["explanation"]["rules"]))


def test_run_dirs_with_identical_code_and_noisy_bench_report_no_regression(tmp_path: Path) -> None:
    base = make_run(tmp_path, "base", {"smem": samples(0.30, 0.03, seed=1)})
    cur = make_run(tmp_path, "cur", {"smem": samples(0.30, 0.03, seed=2)})
    result = diff_runs(base, cur)
    names = {k.key.name: k for k in result.kernels}
    # the variant's kernel takes the variant name; the other kernel keeps its function name
    assert set(names) == {"smem", "sgemm_naive"}
    assert names["smem"].key.size == (1024, 1024, 1024)
    assert names["smem"].timing.source == "bench"
    assert names["smem"].timing.timing.n_baseline == 30
    assert result.exit_code == 0
    assert ncuh(base, cur).returncode == 0


def test_injected_bench_slowdown_without_counter_change_says_so(tmp_path: Path, golden) -> None:
    base = make_run(tmp_path, "base", {"smem": samples(0.30, 0.01, seed=1)})
    cur = make_run(tmp_path, "cur", {"smem": samples(0.33, 0.01, seed=2)})
    result = diff_runs(base, cur)
    (slower,) = result.regressed
    assert slower.key.name == "smem" and slower.timing.verdict == "SLOWER"
    # no profiler counter moved, and ncu's clock-controlled duration, the second opinion,
    # did not either (300.9 us -> 300.9 us): suspect clocks
    golden("bench_slowdown_explanation",
           "\n".join([slower.explanation.summary, *slower.explanation.lines()]))


def test_injected_slowdown_in_a_renamed_kernel_exits_1_with_counters(
        tmp_path: Path, golden) -> None:
    # the change rewrote variant "smem" as "naive" (paired with --pair) and the bench
    # samples of the current run are 8% slower: the counters of the real kernels explain it
    base = make_run(tmp_path, "base", {"smem": samples(0.30, 0.01, seed=1)})
    cur = make_run(tmp_path, "cur", {"naive": samples(0.324, 0.01, seed=2)})
    out = tmp_path / "summary.md"
    completed = ncuh(base, cur, "--pair", "smem=naive", "--out", out)
    assert completed.returncode == 1, completed.stderr
    golden("renamed_kernel_headline", completed.stdout.splitlines()[0])
    # the counters explain it; sgemm_smem is added and sgemm_naive removed, neither judged
    golden("renamed_kernel_summary", out.read_text(encoding="utf-8"))


def test_a_kernel_that_failed_in_the_current_run_fails_the_diff(tmp_path: Path, golden) -> None:
    base = make_run(tmp_path, "base", {"smem": None, "naive": None})
    cur = make_run(tmp_path, "cur", {"smem": None},
                   failed={"naive": "wrong results: max relative error 3.1e-01"})
    result = diff_runs(base, cur)
    assert [f.label for f in result.broken] == ["naive_1024"]
    assert [k.key.name for k in result.removed] == ["sgemm_smem"]  # naive: broken, not removed
    assert result.exit_code == 1
    completed = ncuh(base, cur, "--format", "junit")
    assert completed.returncode == 1
    assert 'type="FAILED"' in completed.stdout and "max relative error" in completed.stdout
    golden("failed_entry_summary", ncuh(base, cur).stdout)  # the failure and its error line
