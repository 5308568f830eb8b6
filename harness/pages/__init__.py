"""Iteration pages: a run's reports and findings collected into a `Writeup`
(`collect`), rendered to Markdown and self-contained HTML with plots (`write`), which a
`started_drawer` begun before the reading draws beside it; a program's run (`profile --top`)
as its ranking and a page per profiled kernel (`collect_program`, `write_program`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.pages.markdown_html import markdown_to_html
    from harness.pages.plot_drawer import PlotDrawer, started_drawer
    from harness.pages.program import ProgramWriteup, collect_program, ranked_run
    from harness.pages.program_render import write_program
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
    "PlotDrawer": ("harness.pages.plot_drawer", "PlotDrawer"),
    "started_drawer": ("harness.pages.plot_drawer", "started_drawer"),
    "ProgramWriteup": ("harness.pages.program", "ProgramWriteup"),
    "collect_program": ("harness.pages.program", "collect_program"),
    "ranked_run": ("harness.pages.program", "ranked_run"),
    "write_program": ("harness.pages.program_render", "write_program"),
}

__all__ = [
    "Change",
    "GpuComparison",
    "GpuFigure",
    "GpuKernel",
    "KernelPage",
    "KeyValue",
    "PlotDrawer",
    "ProgramWriteup",
    "Writeup",
    "bound_unit",
    "collect",
    "collect_program",
    "compare_gpus",
    "index_pages",
    "key_values",
    "markdown_to_html",
    "ranked_run",
    "render_index",
    "since_previous",
    "started_drawer",
    "write",
    "write_program",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
