"""Reading Nsight Compute reports: the only package that imports `ncu_report`.

Everything downstream (findings, writeup, diff, the report and export commands) reads reports
through the typed `KernelReport` built here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.report.batch_read import read_ahead
    from harness.report.builder import (
        build_kernel_report,
        every_metric,
        load_kernel_reports,
        load_kernel_summaries,
        may_fork,
    )
    from harness.report.export_format import EXPORT_FORMATS, write_export
    from harness.report.instruction_classes import MATH_CLASSES
    from harness.report.math_precisions import MathRate, math_rates, tensor_precisions
    from harness.report.metrics_export import metrics as export_metrics_csv
    from harness.report.model import (
        ASYNC_LOADS,
        OCCUPANCY_LIMITERS,
        AsyncCopies,
        BankConflictStats,
        KernelReport,
        Number,
        PipeUse,
        RuleResult,
        limiters_of,
        stall_label,
    )
    from harness.report.ncu_import import import_ncu_report
    from harness.report.report_export import exported
    from harness.report.report_view import (
        DETAILS,
        VIEW_FORMATS,
        profile_views,
        render_text,
        report_views,
    )
    from harness.report.report_view import (
        render as render_view,
    )
    from harness.report.reportfile import EXPORT_COLUMNS, export_columns
    from harness.report.roofline import Roofline
    from harness.report.sass_hotspots import Hotspot, hotspots
    from harness.report.stall_sites import (
        SITE_CLASSES,
        Carrier,
        ReasonSites,
        Site,
        site_words,
        sites_by_reason,
    )

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "Listing": ("harness.report.sass_hotspots", "Listing"),
    "open_report": ("harness.report.reportfile", "open_report"),
    "export_metrics": ("harness.report.reportfile", "export_metrics"),
    "select_kernels": ("harness.report.reportfile", "select_kernels"),
    "ASYNC_LOADS": ("harness.report.model", "ASYNC_LOADS"),
    "AsyncCopies": ("harness.report.model", "AsyncCopies"),
    "BankConflictStats": ("harness.report.model", "BankConflictStats"),
    "DETAILS": ("harness.report.report_view", "DETAILS"),
    "EXPORT_COLUMNS": ("harness.report.reportfile", "EXPORT_COLUMNS"),
    "EXPORT_FORMATS": ("harness.report.export_format", "EXPORT_FORMATS"),
    "Hotspot": ("harness.report.sass_hotspots", "Hotspot"),
    "Carrier": ("harness.report.stall_sites", "Carrier"),
    "SITE_CLASSES": ("harness.report.stall_sites", "SITE_CLASSES"),
    "ReasonSites": ("harness.report.stall_sites", "ReasonSites"),
    "Site": ("harness.report.stall_sites", "Site"),
    "site_words": ("harness.report.stall_sites", "site_words"),
    "sites_by_reason": ("harness.report.stall_sites", "sites_by_reason"),
    "KernelReport": ("harness.report.model", "KernelReport"),
    "MATH_CLASSES": ("harness.report.instruction_classes", "MATH_CLASSES"),
    "MathRate": ("harness.report.math_precisions", "MathRate"),
    "math_rates": ("harness.report.math_precisions", "math_rates"),
    "tensor_precisions": ("harness.report.math_precisions", "tensor_precisions"),
    "Number": ("harness.report.model", "Number"),
    "OCCUPANCY_LIMITERS": ("harness.report.model", "OCCUPANCY_LIMITERS"),
    "PipeUse": ("harness.report.model", "PipeUse"),
    "Roofline": ("harness.report.roofline", "Roofline"),
    "RuleResult": ("harness.report.model", "RuleResult"),
    "VIEW_FORMATS": ("harness.report.report_view", "VIEW_FORMATS"),
    "build_kernel_report": ("harness.report.builder", "build_kernel_report"),
    "export_columns": ("harness.report.reportfile", "export_columns"),
    "every_metric": ("harness.report.builder", "every_metric"),
    "export_metrics_csv": ("harness.report.metrics_export", "metrics"),
    "exported": ("harness.report.report_export", "exported"),
    "hotspots": ("harness.report.sass_hotspots", "hotspots"),
    "import_ncu_report": ("harness.report.ncu_import", "import_ncu_report"),
    "limiters_of": ("harness.report.model", "limiters_of"),
    "load_kernel_reports": ("harness.report.builder", "load_kernel_reports"),
    "load_kernel_summaries": ("harness.report.builder", "load_kernel_summaries"),
    "may_fork": ("harness.report.builder", "may_fork"),
    "profile_views": ("harness.report.report_view", "profile_views"),
    "read_ahead": ("harness.report.batch_read", "read_ahead"),
    "render_text": ("harness.report.report_view", "render_text"),
    "render_view": ("harness.report.report_view", "render"),
    "report_views": ("harness.report.report_view", "report_views"),
    "stall_label": ("harness.report.model", "stall_label"),
    "write_export": ("harness.report.export_format", "write_export"),
}

__all__ = [
    "ASYNC_LOADS",
    "DETAILS",
    "EXPORT_COLUMNS",
    "EXPORT_FORMATS",
    "MATH_CLASSES",
    "OCCUPANCY_LIMITERS",
    "SITE_CLASSES",
    "VIEW_FORMATS",
    "AsyncCopies",
    "BankConflictStats",
    "Carrier",
    "Hotspot",
    "KernelReport",
    "Listing",
    "MathRate",
    "Number",
    "PipeUse",
    "ReasonSites",
    "Roofline",
    "RuleResult",
    "Site",
    "build_kernel_report",
    "every_metric",
    "export_columns",
    "export_metrics",
    "export_metrics_csv",
    "exported",
    "hotspots",
    "import_ncu_report",
    "limiters_of",
    "load_kernel_reports",
    "load_kernel_summaries",
    "math_rates",
    "may_fork",
    "open_report",
    "profile_views",
    "read_ahead",
    "render_text",
    "render_view",
    "report_views",
    "select_kernels",
    "site_words",
    "sites_by_reason",
    "stall_label",
    "tensor_precisions",
    "write_export",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
