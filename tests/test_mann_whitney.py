"""ncuh's Mann-Whitney U test gives scipy's p-values: exact on small samples without ties,
the normal approximation (tie and continuity corrected) otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.diff.rank_test import EXACT_MAX_SIDE, mann_whitney_p

ODD8 = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0]
EVEN12 = [4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0, 26.0]


def test_scipys_worked_example_is_exact() -> None:
    # scipy.stats.mannwhitneyu's documentation: diagnosis ages, U = 17, p = 1/9
    assert mann_whitney_p([19, 22, 16, 29, 24], [20, 11, 17, 12]) == pytest.approx(1 / 9)


def test_eight_on_one_side_is_exact_and_nine_on_both_is_not() -> None:
    assert EXACT_MAX_SIDE == 8
    # scipy: 0.038707628800508063 exact (0.040902264159613795 by the normal approximation)
    assert mann_whitney_p(ODD8, EVEN12) == pytest.approx(0.038707628800508063, rel=1e-12)
    # nine a side: the normal approximation (exact would be 0.29732620320855613)
    nine = [*ODD8, 16.5]
    assert mann_whitney_p(nine, EVEN12[:9]) == pytest.approx(0.28931483238198774, rel=1e-12)


def test_ties_take_the_corrected_normal_approximation() -> None:
    assert mann_whitney_p([1, 2, 2, 3, 3, 3], [3, 4, 4, 5]) == pytest.approx(
        0.026826219079541514, rel=1e-12)


def test_edges() -> None:
    assert mann_whitney_p([2.0] * 5, [2.0] * 7) == 1.0  # nothing to tell apart
    assert mann_whitney_p([1.0], [2.0]) == 1.0
    assert math.isnan(mann_whitney_p([1.0, math.nan], [2.0, 3.0]))
    assert mann_whitney_p(EVEN12, ODD8) == mann_whitney_p(ODD8, EVEN12)  # two-sided
    with pytest.raises(ValueError):
        mann_whitney_p([], [1.0])


def test_the_p_values_are_scipys() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    exact = 0
    for case in range(600):
        n1, n2 = int(rng.integers(1, 14)), int(rng.integers(1, 45))
        if case % 3 == 0:  # distinct values
            x, y = rng.normal(0, 1, n1), rng.normal(0.4, 1, n2)
        elif case % 3 == 1:  # many ties
            x, y = rng.integers(0, 5, n1).astype(float), rng.integers(0, 6, n2).astype(float)
        else:  # timings read to a microsecond
            x, y = rng.normal(1.0, 0.02, n1).round(3), rng.normal(1.01, 0.02, n2).round(3)
        theirs = float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
        assert mann_whitney_p(x.tolist(), y.tolist()) == pytest.approx(theirs, rel=1e-12)
        exact += min(n1, n2) <= EXACT_MAX_SIDE and len(set([*x, *y])) == n1 + n2
    assert exact > 100  # both methods were compared
