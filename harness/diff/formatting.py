"""Numbers for people: a few significant figures with SI suffixes, signed percentages."""

from __future__ import annotations

import math

_SUFFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))
EXACT_BYTES = 10 * 1024  # byte counts under 10 KiB are shown exact, with thousands separators


def count(value: float | None) -> str:
    """16300000 -> '16.3M', 279780 -> '279.8K', 0 -> '0', 21.434 -> '21.4'."""
    if value is None:
        return "n/c"  # not collected
    if not math.isfinite(value):
        return str(value)
    magnitude = abs(value)
    for factor, suffix in _SUFFIXES:
        if magnitude >= factor:
            return f"{value / factor:.3g}{suffix}" if magnitude / factor < 100 \
                else f"{value / factor:.1f}{suffix}"
    if value == int(value):
        return str(int(value))
    return f"{value:.3g}" if magnitude < 100 else f"{value:.1f}"


def significant(value: float, digits: int = 4) -> str:
    """`value` to `digits` significant figures, trailing zeros kept: 5.51 -> '5.510', so that
    two times side by side show the same precision (5.511 ms -> 5.510 ms)."""
    if value == 0:
        return "0"
    text = f"{value:#.{digits}g}"
    return text if "e" in text else text.rstrip(".")


def quantity(value: float | None, unit: str) -> str:
    """A value with its unit; times in ns or ms are shown in the most readable of us/ms/s,
    each to four significant figures."""
    if value is None:
        return "n/c"
    if unit in ("ns", "ms"):
        seconds = value * (1e-9 if unit == "ns" else 1e-3)
        for factor, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if seconds >= factor:
                return f"{significant(seconds / factor)} {name}"
        return f"{significant(seconds * 1e9)} ns"
    if unit == "B" and value == int(value) and abs(value) < EXACT_BYTES:
        return f"{int(value):,} B"  # a few KiB read best exact: 1,024 B, not 1.02 KB
    text = count(value)
    if unit == "B" and text[-1] in "KMGT":  # 262.1 KB, 12.6 MB (powers of 1000, as count's)
        return f"{text[:-1]} {text[-1]}B"
    return f"{text} {unit}" if unit else text


def percent(change: float | None, digits: int = 1) -> str:
    if change is None:
        return "n/c"
    if math.isinf(change):
        return "new" if change > 0 else "gone"
    return f"{change:+.{digits}f}%"
