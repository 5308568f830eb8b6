"""Baseline-against-current comparison for CI (`ncuh diff`).
"""

from harness import lazy_names

# names of modules that import numpy, pydantic: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.diff.compare": ("DiffResult", "KernelDiff", "diff_runs"),
    "harness.diff.explain": (
        "EXPLANATORY_COUNTERS", "STALL_PREFIX", "STALL_SUFFIX", "explain_counters",
    ),
    "harness.diff.inputs": (
        "Environment", "FailedEntry", "KernelData", "KernelKey", "Side", "load_side",
    ),
    "harness.diff.json_output": ("render_json",),
    "harness.diff.junit": ("render_junit",),
    "harness.diff.markdown": ("render_markdown", "status_line"),
    "harness.diff.stats": ("TimingComparison", "compare_samples"),
    "harness.diff.thresholds": (
        "Direction", "MetricRule", "NCU_DURATION", "Thresholds", "TimingSettings",
        "load_thresholds",
    ),
    "harness.diff.verdicts": ("judge_kernel", "kernel_verdict"),
})
