"""Change points on synthetic series with known steps and noise (no store involved)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.diff.thresholds import load_thresholds
from harness.history.changes import STEP_PCT
from harness.history.steps import Point, candidates, find_steps, noise_sigma

SETTINGS = load_thresholds(None).timing


def bench_series(levels: list[float], run_noise: float, sample_noise: float,
                 seed: int) -> list[Point]:
    """One point per level: 30 bench samples around the level, itself moved by run noise."""
    rng = np.random.default_rng(seed)
    points = []
    for level in levels:
        run_level = level * (1.0 + run_noise * rng.standard_normal())
        drawn = run_level * (1.0 + sample_noise * rng.standard_normal(30))
        points.append(Point(float(np.median(drawn)), tuple(float(x) for x in drawn)))
    return points


def steps_of(points: list[Point]) -> list[tuple[int, float]]:
    return [(s.index, round(s.change_pct, 1))
            for s in find_steps(points, STEP_PCT, "lower", SETTINGS)]


@pytest.mark.parametrize("seed", range(6))
def test_an_a_a_history_of_identical_runs_has_no_step(seed: int) -> None:
    # 40 runs of the same code: 1% noise within a run, 0.7% between runs (clocks, machine)
    assert steps_of(bench_series([0.30] * 40, 0.007, 0.01, seed)) == []


@pytest.mark.parametrize("seed", range(4))
def test_a_real_3_percent_step_with_bench_samples_is_found_where_it_is(seed: int) -> None:
    points = bench_series([0.30] * 15 + [0.309] * 15, 0.003, 0.01, seed)
    ((index, change),) = steps_of(points)
    assert index == 15
    assert 2.3 < change < 3.7


def test_a_1_percent_step_is_below_what_history_calls_a_step() -> None:
    points = bench_series([0.30] * 15 + [0.303] * 15, 0.001, 0.01, seed=3)
    assert 15 in candidates([p.value for p in points])  # the segmentation sees it ...
    assert steps_of(points) == []  # ... but it is smaller than a step


def test_steps_without_bench_samples_are_judged_on_the_runs_values() -> None:
    rng = np.random.default_rng(7)
    values = [0.316 * (1 + 0.002 * rng.standard_normal()) for _ in range(10)]
    values += [0.316 * 1.08 * (1 + 0.002 * rng.standard_normal()) for _ in range(10)]
    found = find_steps([Point(v) for v in values], STEP_PCT, "lower", SETTINGS)
    (step,) = found
    assert step.index == 10 and step.comparison.method == "bootstrap+mann-whitney"
    assert step.comparison.n_baseline == 5 and step.comparison.n_current == 5
    assert 7.0 < step.change_pct < 9.0


def test_two_steps_up_and_down_are_both_found() -> None:
    points = bench_series([0.30] * 10 + [0.33] * 10 + [0.30] * 10, 0.002, 0.01, seed=5)
    found = find_steps(points, STEP_PCT, "lower", SETTINGS)
    assert [(s.index, s.comparison.verdict) for s in found] == [(10, "SLOWER"), (20, "FASTER")]


def test_noise_is_measured_from_neighbours_so_a_step_barely_moves_it() -> None:
    flat = [1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.01]
    stepped = flat[:4] + [v + 0.5 for v in flat[4:]]
    assert noise_sigma(stepped) == pytest.approx(noise_sigma(flat), rel=0.05)
    assert noise_sigma([1.0] * 10) == pytest.approx(1e-4)  # identical values: the floor


def test_one_outlying_run_is_not_a_step() -> None:
    levels = [0.30] * 10 + [0.33] + [0.30] * 9 + [0.33]
    assert steps_of(bench_series(levels, 0.002, 0.01, seed=11)) == []
