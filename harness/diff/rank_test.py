"""The two-sided Mann-Whitney U test: the p-value `scipy.stats.mannwhitneyu` gives by default.

Exact where one side has eight samples or fewer and no value repeats (the null distribution of
U counted as the coefficients of a Gaussian binomial coefficient, in integers); else the normal
approximation with the tie correction and the continuity correction of 1/2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

EXACT_MAX_SIDE = 8  # scipy's "auto": exact when a side is this small and nothing is tied


def mann_whitney_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p-value that `x` and `y` come from one distribution (NaN where either holds a
    NaN, as scipy propagates it)."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("the Mann-Whitney test needs at least one sample per side")
    if any(math.isnan(v) for v in (*x, *y)):
        return math.nan
    ranks, tie_sizes = _average_ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if min(n1, n2) <= EXACT_MAX_SIDE and all(size == 1 for size in tie_sizes):
        p = 2 * _exact_at_least(round(u), n1, n2)
    else:
        p = 2 * _normal_at_least(u, n1, n2, tie_sizes)
    return min(max(p, 0.0), 1.0)


def _average_ranks(values: list[float]) -> tuple[list[float], list[int]]:
    """Each value's rank (1-based, tied values sharing their average) and the size of each
    group of equal values."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    sizes = []
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and values[order[end]] == values[order[start]]:
            end += 1
        for index in order[start:end]:
            ranks[index] = (start + 1 + end) / 2
        sizes.append(end - start)
        start = end
    return ranks, sizes


def _exact_at_least(u: int, n1: int, n2: int) -> float:
    """P(U >= u) under the null hypothesis, for u at or above the mean n1 * n2 / 2."""
    counts = _u_counts(min(n1, n2), max(n1, n2))
    # the distribution is symmetric: P(U >= u) = P(U <= n1 * n2 - u)
    return sum(counts[: n1 * n2 - u + 1]) / math.comb(n1 + n2, n1)


def _u_counts(k: int, m: int) -> list[int]:
    """How many ways U takes each value 0..k*m: the coefficients of the Gaussian binomial
    coefficient [k+m choose k] in q, built as the product of (1 - q^(m+i)) / (1 - q^i)."""
    counts = [1] + [0] * (k * m)
    for i in range(1, k + 1):
        for power in range(len(counts) - 1, m + i - 1, -1):  # times (1 - q^(m+i))
            counts[power] -= counts[power - m - i]
        for power in range(i, len(counts)):  # divided by (1 - q^i): exact, a polynomial
            counts[power] += counts[power - i]
    return counts


def _normal_at_least(u: float, n1: int, n2: int, tie_sizes: list[int]) -> float:
    """P(U >= u) by the normal approximation, corrected for ties and for continuity."""
    n = n1 + n2
    tie_term = sum(t**3 - t for t in tie_sizes)
    variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    numerator = u - n1 * n2 / 2 - 0.5
    if variance <= 0:  # every value equal: U sits at its mean
        return 1.0 if numerator < 0 else 0.0
    return 0.5 * math.erfc(numerator / math.sqrt(variance) / math.sqrt(2))
