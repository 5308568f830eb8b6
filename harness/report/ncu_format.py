"""Numbers and units the way ncu prints them on its details page.

ncu scales base units for display: ns -> us/ms/s, hz -> Khz/Mhz/Ghz, byte (in any position) ->
Kbyte/Mbyte/Gbyte/Tbyte, and X/s (X not bytes) -> X/ms, X/us, X/ns. It then prints integral
values with thousands separators and no decimals (8,762,457; 100) and others with two decimals
(2.62, 8,491,270.67).
"""

from __future__ import annotations

import math

_TIME_SCALES = (("s", 1e9), ("ms", 1e6), ("us", 1e3))  # from ns
_HZ_SCALES = (("Ghz", 1e9), ("Mhz", 1e6), ("Khz", 1e3))
_BYTE_SCALES = (("Tbyte", 1e12), ("Gbyte", 1e9), ("Mbyte", 1e6), ("Kbyte", 1e3))
_PER_SECOND_SCALES = (("ns", 1e9), ("us", 1e6), ("ms", 1e3))  # X/s -> X/<t>: divide by factor


def _pick(value: float, scales: tuple[tuple[str, float], ...]) -> tuple[str, float] | None:
    magnitude = abs(value)
    for name, factor in scales:
        if magnitude >= factor:
            return name, factor
    return None


def scale_unit(value: float, unit: str) -> tuple[float, str]:
    """(value, unit) in the unit ncu would display for a value in base unit `unit`."""
    if not unit or value == 0 or not math.isfinite(value):
        return value, unit
    tokens = unit.split("/")
    if unit == "ns":
        picked = _pick(value, _TIME_SCALES)
        return (value / picked[1], picked[0]) if picked else (value, unit)
    if tokens[0] == "hz" and len(tokens) == 1:
        picked = _pick(value, _HZ_SCALES)
        return (value / picked[1], picked[0]) if picked else (value, unit)
    if "byte" in tokens:
        picked = _pick(value, _BYTE_SCALES)
        if picked is None:
            return value, unit
        index = tokens.index("byte")
        tokens[index] = picked[0]
        return value / picked[1], "/".join(tokens)
    if len(tokens) == 2 and tokens[1] == "s":
        picked = _pick(value, _PER_SECOND_SCALES)
        if picked is None:
            return value, unit
        return value / picked[1], f"{tokens[0]}/{picked[0]}"
    return value, unit


def format_number(value: float | int) -> str:
    """8,762,457 for integral values; 2 decimals with separators otherwise."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.2f}"


def display(value: object, unit: str) -> tuple[str, str]:
    """(value text, unit text) as ncu's details page prints a metric."""
    if value is None:
        return "n/a", unit
    if isinstance(value, str):
        return value, unit
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        scaled, shown_unit = scale_unit(float(value), unit)
        if isinstance(value, int) and shown_unit == unit:
            return format_number(value), unit
        return format_number(scaled), shown_unit
    return str(value), unit
