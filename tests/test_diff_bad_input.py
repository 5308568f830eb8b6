"""Bad inputs to `ncuh diff`: exit status 2 and one clear line on stderr, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from diff_rundirs import H100_ENV, make_run, samples
from packed_fixtures import H100_PAGES_NAIVE, NAIVE_SMEM_REPORT

# One kernel of the `pages` set, 13 times smaller than the SGEMM pair: these runs are refused
# or compared for their manifests, not their counters.
SMALL_REPORT = H100_PAGES_NAIVE


def ncuh_diff(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "diff", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def assert_one_line_error(completed: subprocess.CompletedProcess[str], *words: str) -> str:
    assert completed.returncode == 2, (completed.stdout, completed.stderr)
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("ncuh: error: ")
    assert "Traceback" not in completed.stderr
    for word in words:
        assert word in lines[0]
    return lines[0]


def test_missing_baseline(tmp_path: Path) -> None:
    assert_one_line_error(ncuh_diff(tmp_path / "nope", NAIVE_SMEM_REPORT),
                          "nope", "no such file or directory")


def test_not_a_report(tmp_path: Path) -> None:
    text = tmp_path / "notes.ncu-rep"
    text.write_text("not a report\n", encoding="utf-8")
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, text), "not an Nsight Compute report")


def test_empty_report(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ncu-rep"
    empty.touch()
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, empty), "empty")


def test_truncated_report(tmp_path: Path) -> None:
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(NAIVE_SMEM_REPORT.read_bytes()[:100_000])
    assert_one_line_error(ncuh_diff(cut, NAIVE_SMEM_REPORT), "truncated")


def test_directory_that_is_not_a_run(tmp_path: Path) -> None:
    assert_one_line_error(ncuh_diff(tmp_path, NAIVE_SMEM_REPORT), "not a run directory")


def test_interrupted_run_directory(tmp_path: Path) -> None:
    run = make_run(tmp_path, "r", {"smem": None}, report=SMALL_REPORT)
    interrupted = tmp_path / ".r.abc.incomplete"
    shutil.move(run, interrupted)
    assert_one_line_error(ncuh_diff(interrupted, NAIVE_SMEM_REPORT), "interrupted")


@pytest.mark.parametrize(("field", "value", "words"), [
    ("gpu", "NVIDIA H200", ("GPU (NVIDIA H100 80GB HBM3 vs NVIDIA H200)",)),
    ("compute_capability", "8.0", ("compute capability (9.0 vs 8.0)",)),
    ("ncu_version", "2026.1.0", ("ncu version (2025.3.1 vs 2026.1.0)",)),
])
def test_mismatched_environment_is_refused_and_allow_mismatch_passes(
        tmp_path: Path, field: str, value: str, words: tuple[str, ...]) -> None:
    base = make_run(tmp_path, "base", {"smem": samples(0.30, 0.01, seed=1)},
                    report=SMALL_REPORT)
    cur = make_run(tmp_path, "cur", {"smem": samples(0.30, 0.01, seed=2)},
                   environment={**H100_ENV, field: value}, report=SMALL_REPORT)
    line = assert_one_line_error(ncuh_diff(base, cur), *words, "--allow-mismatch")
    assert line.count(" vs ") == 1  # names only the field that differs
    allowed = ncuh_diff(base, cur, "--allow-mismatch")
    assert allowed.returncode == 0, allowed.stderr
    assert "compared despite differing" in allowed.stdout


def test_report_against_a_run_on_another_gpu_is_refused(tmp_path: Path) -> None:
    cur = make_run(tmp_path, "cur", {"smem": None},
                   environment={**H100_ENV, "gpu": "NVIDIA A100"}, report=SMALL_REPORT)
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, cur), "GPU (NVIDIA H100 80GB HBM3 vs "
                          "NVIDIA A100)")


@pytest.mark.parametrize(("pair", "words"), [("sgemm_naive", ("BASE_KERNEL=CURRENT_KERNEL",)),
                                              ("nope=sgemm_smem", ("no kernel 'nope'",)),
                                              ("sgemm_naive=nope", ("no kernel 'nope'",))])
def test_bad_pair(pair: str, words: tuple[str, ...]) -> None:
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, "--pair", pair), *words)


def test_bad_thresholds_file(tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text('[metrics.time]\ndirection = "up"\n', encoding="utf-8")
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, "--config", config),
                          "metrics.time.direction: Input should be 'lower' or 'higher' (got 'up')")
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, NAIVE_SMEM_REPORT, "--config",
                                    tmp_path / "missing.toml"), "thresholds not found")


def test_failed_diff_leaves_no_output_file(tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    assert_one_line_error(ncuh_diff(NAIVE_SMEM_REPORT, tmp_path / "nope", "--out", out))
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
