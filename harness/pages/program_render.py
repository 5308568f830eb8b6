"""Render a `ProgramWriteup` to Markdown and self-contained HTML, written as one set.

Each process's folder (the run's own folder when the program ran one process) holds its
index (`program_index`), one page per profiled kernel (the chain pages' template, with the
kernel's place in its program) and, for Markdown, the index's plots under `plots/`; where
several processes ran, an index of them (`program_processes`) sits above their folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from harness.errors import ReportError
from harness.pages.plots import ChartCall, Plot
from harness.pages.program import ProcessPages, ProgramWriteup
from harness.pages.render import (
    PLOTS_DIR,
    Format,
    Rendered,
    plot_calls,
    render_page,
    render_template,
)
from harness.util import holds_bad_text, write_file_set

# The chain index's throughput chart reads a work model or FP32 counters: a program's kernels
# have neither in common, so the program's index shows its GPU time instead.
_LEFT_OUT = ("gflops_chart", "bandwidth_chart")
# the charts that name what each bar is: a kernel here, not an iteration
_PER_KERNEL = ("stall_chart", "occupancy_chart", "instruction_mix_chart", "bound_unit_chart")


def program_plots(process: ProcessPages) -> list[Plot]:
    """The index's plots: GPU time per ranked kernel, then the chain index's charts of the
    profiled kernels (stalls, roofline, occupancy, instruction mix, bound unit)."""
    rows = process.rows
    calls = [ChartCall("gpu_time_chart", (
        [row.axis_label for row in rows],
        [row.share.share_pct for row in rows], [row.share.cumulative_pct for row in rows]))]
    if process.pages.pages:
        calls += [ChartCall(call.chart, call.args, {**call.options, "per": "kernel"})
                  if call.chart in _PER_KERNEL else call
                  for call in plot_calls(process.pages) if call.chart not in _LEFT_OUT]
    return [call.kept() or call.drawn() for call in calls]


def _process_files(writeup: ProgramWriteup, process: ProcessPages,
                   formats: tuple[Literal["md", "html"], ...]) -> dict[str, str | bytes]:
    folder = f"{process.folder}/" if process.folder else ""
    plots = program_plots(process)
    files: dict[str, str | bytes] = {}
    for fmt in formats:
        for page in process.pages.pages:
            files[f"{folder}{page.slug}.{fmt}"] = render_page(page, process.pages, fmt)
        files[f"{folder}index.{fmt}"] = render_template(
            "program_index", fmt, writeup=writeup, process=process, plots=plots,
            plots_dir=PLOTS_DIR, up=bool(process.folder))
    if "md" in formats:
        for plot in plots:
            files[f"{folder}{PLOTS_DIR}/{plot.name}.png"] = plot.png
    return files


def write_program(writeup: ProgramWriteup, out: Path | str, fmt: Format = "both") -> Rendered:
    """Write every process's index and pages under `out` as one set, the indexes last."""
    formats: tuple[Literal["md", "html"], ...] = ("md", "html") if fmt == "both" else (fmt,)
    contents: dict[str, str | bytes] = {}
    for process in writeup.processes:
        contents.update(_process_files(writeup, process, formats))
    if len(writeup.processes) > 1:
        for f in formats:
            contents[f"index.{f}"] = render_template("program_processes", f, writeup=writeup)
    if holds_bad_text([text for text in contents.values() if isinstance(text, str)]):
        raise ReportError(f"{writeup.source}: a report holds text that is not UTF-8")
    indexes = [name for name in contents if Path(name).name.startswith("index.")]
    # the top index last: a reader who finds it finds every page it links to
    indexes.sort(key=lambda name: name.count("/"), reverse=True)
    return Rendered(files=tuple(write_file_set(Path(out), contents, last=indexes)))
