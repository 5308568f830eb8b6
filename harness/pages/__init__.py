"""Iteration pages: a run's reports and findings collected into a `Writeup`
(`collect`), rendered to Markdown and self-contained HTML with plots (`write`), which
`plot_workers` started before the reading draw beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.pages.markdown_html import markdown_to_html
    from harness.pages.plots import plot_workers
    from harness.pages.render import write
    from harness.pages.writeup import KernelPage, Writeup, collect, index_pages

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "render_index": ("harness.pages.render", "render_index"),
    "since_previous": ("harness.pages.side_by_side", "since_previous"),
    "key_values": ("harness.pages.side_by_side", "key_values"),
    "bound_unit": ("harness.pages.side_by_side", "bound_unit"),
    "KeyValue": ("harness.pages.side_by_side", "KeyValue"),
    "Change": ("harness.pages.side_by_side", "Change"),
    "compare_gpus": ("harness.pages.gpu_comparison", "compare_gpus"),
    "GpuKernel": ("harness.pages.gpu_comparison", "GpuKernel"),
    "GpuFigure": ("harness.pages.gpu_comparison", "GpuFigure"),
    "GpuComparison": ("harness.pages.gpu_comparison", "GpuComparison"),
    "KernelPage": ("harness.pages.writeup", "KernelPage"),
    "Writeup": ("harness.pages.writeup", "Writeup"),
    "collect": ("harness.pages.writeup", "collect"),
    "index_pages": ("harness.pages.writeup", "index_pages"),
    "markdown_to_html": ("harness.pages.markdown_html", "markdown_to_html"),
    "write": ("harness.pages.render", "write"),
    "plot_workers": ("harness.pages.plots", "plot_workers"),
}

__all__ = [
    "Change",
    "GpuComparison",
    "GpuFigure",
    "GpuKernel",
    "KernelPage",
    "KeyValue",
    "Writeup",
    "bound_unit",
    "collect",
    "compare_gpus",
    "index_pages",
    "key_values",
    "markdown_to_html",
    "plot_workers",
    "render_index",
    "since_previous",
    "write",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
