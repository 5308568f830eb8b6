"""Iteration pages: what they show beside the findings (iterations side by side, the same
kernels on two GPU models)."""

from __future__ import annotations

from harness.pages.compare_gpus import GpuComparison, GpuFigure, GpuKernel, compare_gpus
from harness.pages.side_by_side import (
    Change,
    KeyValue,
    bound_unit,
    key_values,
    since_previous,
)

__all__ = ["Change", "GpuComparison", "GpuFigure", "GpuKernel", "KeyValue", "bound_unit",
           "compare_gpus", "key_values", "since_previous"]
