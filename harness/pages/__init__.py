"""Iteration pages: a run's reports and findings collected into a `Writeup`
(`collect`), rendered to Markdown and self-contained HTML with plots (`write`), which
`plot_workers` started before the reading draw beside it. A program's run (`profile --top`)
is collected by `collect_program` (`ranked_run` finds one) and written by `write_program`, as
its ranking and a page per profiled kernel.
"""

from __future__ import annotations

from harness import lazy_names
from harness.pages.markdown_html import markdown_to_html
from harness.pages.plots import plot_workers
from harness.pages.side_by_side import Change, bound_unit, key_values, since_previous

__all__ = [
    "Change", "KernelPage", "ProgramWriteup", "Writeup", "bound_unit", "collect",
    "collect_program", "key_values", "markdown_to_html", "plot_workers", "ranked_run",
    "render_index", "since_previous", "write", "write_program",
]

# names of modules that import jinja2, pydantic: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.pages.render": ("render_index", "write"),
    "harness.pages.writeup": ("KernelPage", "Writeup", "collect"),
    "harness.pages.program": ("ProgramWriteup", "collect_program", "ranked_run"),
    "harness.pages.program_render": ("write_program",),
})
