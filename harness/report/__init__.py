"""Reading Nsight Compute reports: the only package that imports `ncu_report`.

Everything downstream (findings, writeup, diff, the report and export commands) reads reports
through the typed `KernelReport` built here.
"""

from harness import lazy_names
from harness.report.builder import every_metric, load_kernel_reports, load_kernel_summaries
from harness.report.export_format import EXPORT_FORMATS
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
from harness.report.report_export import exported
from harness.report.report_view import DETAILS, VIEW_FORMATS, render_text, render_view, report_views
from harness.report.reportfile import export_metrics, open_report, select_kernels
from harness.report.roofline import Roofline
from harness.report.sass_hotspots import Hotspot, Listing, hotspots
from harness.report.stall_sites import (
    SITE_CLASSES,
    TRACED,
    Carrier,
    ReasonSites,
    Site,
    site_words,
    sites_by_reason,
)

# names of modules that run as programs (python -m): imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.report.metrics_export": ("export_metrics_csv",),
})
