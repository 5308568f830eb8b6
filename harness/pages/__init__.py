"""Iteration pages: what they show beside the findings (iterations side by side)."""

from __future__ import annotations

from harness.pages.side_by_side import (
    Change,
    KeyValue,
    bound_unit,
    key_values,
    since_previous,
)

__all__ = ["Change", "KeyValue", "bound_unit", "key_values", "since_previous"]
