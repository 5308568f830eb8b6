"""Iteration pages: a run's reports and findings collected into a `Writeup`
(`collect`), rendered to Markdown and self-contained HTML with plots (`write`), which
`plot_workers` started before the reading draw beside it. A program's run (`profile --top`)
is collected by `collect_program` (`ranked_run` finds one) and written by `write_program`, as
its ranking and a page per profiled kernel.
"""

from harness import lazy_names
from harness.pages.plots import plot_workers

# names of modules that import jinja2, pydantic: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.pages.render": ("render_index", "write"),
    "harness.pages.writeup": ("Writeup", "collect"),
    "harness.pages.program": ("collect_program", "ranked_run"),
    "harness.pages.program_render": ("write_program",),
})
