"""ncuh's binary segmentation finds the change points ruptures' Binseg (l2 cost, every index a
candidate) finds, under the same penalty and smallest segment."""

from __future__ import annotations

import numpy as np
import pytest

from harness.history.segmentation import change_points


def test_one_step_is_found_where_it_is() -> None:
    series = [1.0, 1.01, 0.99, 1.0, 2.0, 2.02, 1.98, 2.0]
    # the split's gain: 2.0 (eight points half a unit from the mean, the noise cancelling)
    assert change_points(series, penalty=1.999, min_size=2) == [4]
    assert change_points(series, penalty=2.0, min_size=2) == []  # a gain must exceed it


def test_two_steps_and_the_smallest_segment() -> None:
    series = [0.0] * 5 + [3.0] * 5 + [1.0] * 5
    assert change_points(series, penalty=0.5, min_size=2) == [5, 10]
    # a step one point from an end makes a segment smaller than the smallest allowed
    assert change_points([0.0, 5.0, 5.0, 5.0, 5.0, 5.0], penalty=0.5, min_size=2) == [2]
    assert change_points([0.0, 5.0, 5.0, 5.0, 5.0, 5.0], penalty=0.5, min_size=1) == [1]
    assert change_points([1.0] * 10, penalty=0.0, min_size=2) == []  # no gain anywhere


def test_the_change_points_are_ruptures() -> None:
    ruptures = pytest.importorskip("ruptures")
    rng = np.random.default_rng(11)
    found = 0
    for case in range(300):
        n, min_size = int(rng.integers(4, 90)), int(rng.integers(1, 4))
        levels = np.repeat(rng.normal(0, 1, 4), n // 4 + 1)[:n]
        series = levels + rng.normal(0, 0.3, n)
        if case % 4 == 0:
            series = series.round(1)  # equal gains, broken the same way
        penalty = float(rng.choice([0.0, 0.1, 1.0, 3.0]))
        algo = ruptures.Binseg(model="l2", min_size=min_size, jump=1).fit(series.reshape(-1, 1))
        theirs = [int(b) for b in algo.predict(pen=penalty)[:-1]]
        assert change_points(series.tolist(), penalty, min_size) == theirs
        found += bool(theirs)
    assert found > 200
