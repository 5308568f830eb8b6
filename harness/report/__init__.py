"""Reading Nsight Compute reports: the only package that imports `ncu_report`.

Everything downstream (findings, writeup, diff, the report and export commands) reads reports
through the typed `KernelReport` built here.
"""

from __future__ import annotations

from harness import lazy_names
from harness.report.builder import (
    build_kernel_report,
    every_metric,
    load_kernel_reports,
    load_kernel_summaries,
)
from harness.report.export_format import EXPORT_FORMATS, write_export
from harness.report.instruction_classes import MATH_CLASSES
from harness.report.math_precisions import MathRate, math_rates, tensor_precisions
from harness.report.model import (
    ASYNC_LOADS,
    OCCUPANCY_LIMITERS,
    AsyncCopies,
    BankConflictStats,
    KernelReport,
    PipeUse,
    RuleResult,
    SassInstruction,
    limiters_of,
    stall_label,
)
from harness.report.ncu_import import import_ncu_report
from harness.report.report_export import exported
from harness.report.report_view import (
    DETAILS,
    VIEW_FORMATS,
    render_text,
    render_view,
    report_views,
)
from harness.report.reportfile import (
    EXPORT_COLUMNS,
    export_columns,
    export_metrics,
    open_report,
    select_kernels,
)
from harness.report.roofline import Roofline
from harness.report.sass_hotspots import Hotspot, Listing, hotspots
from harness.report.stall_sites import (
    SITE_CLASSES,
    Carrier,
    ReasonSites,
    Site,
    site_words,
    sites_by_reason,
)

__all__ = [
    "ASYNC_LOADS", "DETAILS", "EXPORT_COLUMNS", "EXPORT_FORMATS", "MATH_CLASSES",
    "OCCUPANCY_LIMITERS", "SITE_CLASSES", "VIEW_FORMATS", "AsyncCopies", "BankConflictStats",
    "Carrier", "Hotspot", "KernelReport", "Listing", "MathRate", "PipeUse", "ReasonSites",
    "Roofline", "RuleResult", "SassInstruction", "Site", "build_kernel_report", "every_metric",
    "export_columns", "export_metrics",
    "export_metrics_csv", "exported", "hotspots", "import_ncu_report", "limiters_of",
    "load_kernel_reports", "load_kernel_summaries", "math_rates", "open_report",
    "render_text", "render_view", "report_views", "select_kernels", "site_words",
    "sites_by_reason", "stall_label", "tensor_precisions", "write_export",
]

# names of modules that run as programs (python -m): imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.report.metrics_export": ("export_metrics_csv",),
})
