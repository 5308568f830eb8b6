"""Binary segmentation of a series under the l2 cost: the change points ruptures'
`Binseg(model="l2", min_size=..., jump=1).fit(x).predict(pen=...)` gives, by the same steps.

A segment's cost is its squared deviation from its mean (numpy's `var` times its length, as
ruptures computes it). Each round, every segment offers its best split (the largest gain,
the later index on a tie) and the best offer of all (the first segment's on a tie) is taken
while its gain exceeds the penalty.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import pairwise

import numpy as np


def change_points(values: Sequence[float], penalty: float, min_size: int) -> list[int]:
    """Indices where the series splits (each the first point after a split), in order."""
    x = np.asarray(values, dtype=float)

    @functools.cache
    def cost(start: int, end: int) -> float:
        return float(x[start:end].var() * (end - start))

    @functools.cache
    def best_split(start: int, end: int) -> tuple[int | None, float]:
        whole = cost(start, end)
        offers = [(whole - cost(start, split) - cost(split, end), split)
                  for split in range(start + min_size, end - min_size + 1)]
        if not offers:
            return None, 0.0
        gain, split = max(offers)
        return split, gain

    bounds = [len(x)]
    while True:
        split, gain = max((best_split(start, end) for start, end in pairwise([0, *bounds])),
                          key=lambda offer: offer[1])
        if split is None or not gain > penalty:
            return bounds[:-1]
        bounds = sorted([*bounds, split])
