"""Recorded runs replayed as a history, on both stores: steps found, explained as diff does,
and the gate over the series (`check_runs`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_support import (  # noqa: F401  (the pg_server and store_url fixtures)
    SMEM_TILED,
    pg_server_fixture,
    recorded,
    samples,
    sha,
    store_url_fixture,
    with_samples,
    write_run,
)

from harness.diff.compare import diff_runs
from harness.diff.thresholds import load_thresholds
from harness.history import build_trends, check_runs, open_store
from harness.history.changes import series_steps, step_thresholds
from harness.history.record import read_run
from harness.history.series import build_series

THRESHOLDS = load_thresholds(None)


def replay(store_url: str, kinds: list[str], gpus: list[str] | None = None) -> list:  # type: ignore[type-arg]
    """Record the real runs at commits 1, 2, ...: each run with bench samples of its own."""
    store = open_store(store_url, create=True)
    for n, kind in enumerate(kinds, start=1):
        gpu = gpus[n - 1] if gpus else "h100"
        median = 0.30 if kind == "base" else 0.318
        store.add(with_samples(recorded(kind, gpu), samples(median, 0.01, seed=n)), sha(n),
                  "main")
    runs = store.runs()
    store.close()
    return runs


def test_the_regression_is_found_and_explained_by_the_counters_diff_names(
        store_url: str) -> None:
    runs = replay(store_url, ["base"] * 6 + ["slower"] * 6)
    (series,) = build_series(runs)
    (step,) = series_steps(series, step_thresholds(THRESHOLDS))
    assert step.found.index == 6
    assert step.commit_range == f"{sha(6)[:10]}..{sha(7)[:10]}"
    assert step.regression and 5.0 < step.change_pct < 7.0
    # the same pair through `ncuh diff`: the run directories themselves
    pair = diff_runs(recorded("base").source, recorded("slower").source)
    (kernel,) = pair.kernels
    assert kernel.verdict == "SLOWER" and step.diff.verdict == "SLOWER"
    ours, theirs = step.diff.explanation, kernel.explanation
    assert [m.text for m in ours.counters] == [m.text for m in theirs.counters]
    assert [m.text for m in ours.stalls] == [m.text for m in theirs.stalls]
    assert [m.text for m in ours.rules] == [m.text for m in theirs.rules]
    assert ours.counters  # the rewrite moved real counters
    assert ours.summary.split(": ", 1)[1] == theirs.summary.split(": ", 1)[1]


def test_an_a_a_history_of_the_same_recorded_run_has_no_step(store_url: str) -> None:
    runs = replay(store_url, ["base"] * 12)
    (series,) = build_series(runs)
    assert series_steps(series, step_thresholds(THRESHOLDS)) == []


def test_check_fails_when_the_newest_run_opens_a_regression_step(store_url: str) -> None:
    runs = replay(store_url, ["base"] * 6 + ["slower"])
    result = check_runs(runs, THRESHOLDS)
    assert result is not None and result.exit_code == 1
    (kernel,) = result.regressed
    assert kernel.key.name == "gemm" and kernel.timing.source == "bench"
    assert 5.0 < kernel.timing.change_pct < 7.0
    pair = diff_runs(recorded("base").source, recorded("slower").source)
    assert [m.text for m in kernel.explanation.counters] == \
        [m.text for m in pair.kernels[0].explanation.counters]
    assert str(result.baseline.path) == f"history {sha(1)[:10]}..{sha(6)[:10]}"


def test_check_passes_a_newest_run_like_the_series(store_url: str) -> None:
    runs = replay(store_url, ["base"] * 7)
    result = check_runs(runs, THRESHOLDS)
    assert result is not None and result.exit_code == 0
    assert [k.verdict for k in result.kernels] == ["SAME"]


def test_check_holds_the_newest_run_against_the_level_since_the_last_step(
        store_url: str) -> None:
    # the series stepped up at run 6 and stayed: the newest is like its settled level ...
    runs = replay(store_url, ["base"] * 5 + ["slower"] * 5)
    assert check_runs(runs, THRESHOLDS).exit_code == 0
    # ... but since the last commit before the step, it is a regression
    assert check_runs(runs, THRESHOLDS, since=sha(5)[:8]).exit_code == 1


def test_check_never_compares_gpu_models(store_url: str) -> None:
    runs = replay(store_url, ["base"] * 3 + ["slower"], gpus=["h100"] * 3 + ["h200"])
    assert check_runs(runs, THRESHOLDS) is None


def test_check_since_an_unknown_commit_is_one_line(store_url: str) -> None:
    from harness.history import HistoryError

    runs = replay(store_url, ["base"] * 3)
    with pytest.raises(HistoryError, match="--since deadbeef: no earlier run at that commit"):
        check_runs(runs, THRESHOLDS, since="deadbeef")


def test_gpu_models_are_never_one_series_but_are_shown_side_by_side(store_url: str) -> None:
    runs = replay(store_url, ["base"] * 6, gpus=["h100", "h200"] * 3)
    series = build_series(runs)
    assert [(s.key.gpu, len(s)) for s in series] == [("NVIDIA H100 80GB HBM3", 3),
                                                     ("NVIDIA H200", 3)]
    trends = build_trends(runs)
    (side_by_side,) = trends.gpu_views
    assert side_by_side.label == "gemm [1024x1024x1024]"
    assert side_by_side.png.startswith(b"\x89PNG")


def test_a_kernel_that_failed_in_the_newest_run_fails_the_check(store_url: str,
                                                               tmp_path: Path) -> None:
    runs = replay(store_url, ["base"] * 3)
    failed = read_run(write_run(tmp_path, "broken", SMEM_TILED, None,
                                error="wrong results: max relative error 3.1e-01"))
    store = open_store(store_url)
    store.add(failed, sha(4))
    runs = store.runs()
    store.close()
    assert [f.label for f in runs[-1].failed] == ["gemm_1024"]
    result = check_runs(runs, THRESHOLDS)
    assert result.exit_code == 1 and not result.kernels and not result.removed
    assert [(f.label, f.error) for f in result.broken] == [
        ("gemm_1024", "wrong results: max relative error 3.1e-01")]
