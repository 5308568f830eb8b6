"""Baseline-against-current comparison for CI (`ncuh diff`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.diff.compare import diff_runs
    from harness.diff.json_output import render_json
    from harness.diff.junit import render_junit
    from harness.diff.markdown import render_markdown, status_line

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "TimingSettings": ("harness.diff.thresholds", "TimingSettings"),
    "compare_samples": ("harness.diff.stats", "compare_samples"),
    "TimingComparison": ("harness.diff.stats", "TimingComparison"),
    "NCU_DURATION": ("harness.diff.thresholds", "NCU_DURATION"),
    "load_side": ("harness.diff.inputs", "load_side"),
    "KernelKey": ("harness.diff.inputs", "KernelKey"),
    "FailedEntry": ("harness.diff.inputs", "FailedEntry"),
    "EXPLANATORY_COUNTERS": ("harness.diff.explain", "EXPLANATORY_COUNTERS"),
    "STALL_SUFFIX": ("harness.diff.explain", "STALL_SUFFIX"),
    "STALL_PREFIX": ("harness.diff.explain", "STALL_PREFIX"),
    "Direction": ("harness.diff.thresholds", "Direction"),
    "Side": ("harness.diff.inputs", "Side"),
    "KernelData": ("harness.diff.inputs", "KernelData"),
    "Environment": ("harness.diff.inputs", "Environment"),
    "DiffResult": ("harness.diff.compare", "DiffResult"),
    "kernel_verdict": ("harness.diff.verdicts", "kernel_verdict"),
    "judge_kernel": ("harness.diff.verdicts", "judge_kernel"),
    "Thresholds": ("harness.diff.thresholds", "Thresholds"),
    "MetricRule": ("harness.diff.thresholds", "MetricRule"),
    "explain_counters": ("harness.diff.explain", "explain"),
    "KernelDiff": ("harness.diff.compare", "KernelDiff"),
    "load_thresholds": ("harness.diff.thresholds", "load_thresholds"),
    "diff_runs": ("harness.diff.compare", "diff_runs"),
    "render_json": ("harness.diff.json_output", "render_json"),
    "render_junit": ("harness.diff.junit", "render_junit"),
    "render_markdown": ("harness.diff.markdown", "render_markdown"),
    "status_line": ("harness.diff.markdown", "status_line"),
}

__all__ = [
    "EXPLANATORY_COUNTERS",
    "NCU_DURATION",
    "STALL_PREFIX",
    "STALL_SUFFIX",
    "DiffResult",
    "Direction",
    "Environment",
    "FailedEntry",
    "KernelData",
    "KernelDiff",
    "KernelKey",
    "MetricRule",
    "Side",
    "Thresholds",
    "TimingComparison",
    "TimingSettings",
    "compare_samples",
    "diff_runs",
    "explain_counters",
    "judge_kernel",
    "kernel_verdict",
    "load_side",
    "load_thresholds",
    "render_json",
    "render_junit",
    "render_markdown",
    "status_line",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
