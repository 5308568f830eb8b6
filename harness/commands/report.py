"""`ncuh report REPORT`: ncu's "Profiling Results" view of any report, on any machine."""

from __future__ import annotations

from pathlib import Path

import click

from harness.commands.options import kernel_option
from harness.errors import ReportError, printable
from harness.report import DETAILS, VIEW_FORMATS, render_view, report_views
from harness.util import holds_bad_text


@click.command(short_help="Print each kernel's sections and ncu's rules.")
@click.argument("report", type=click.Path(path_type=Path))
@kernel_option
@click.option("--format", "fmt", type=click.Choice(VIEW_FORMATS), default="text",
              show_default=True)
@click.option("--print-details", "details", type=click.Choice(DETAILS), default="header",
              show_default=True,
              help="As ncu's --print-details: 'all' adds the sections' body tables "
                   "(throughput breakdowns, pipe utilization).")
def report(report: Path, kernel_regex: str | None, fmt: str, details: str) -> None:
    """Print each kernel's sections (metric, unit, value) and ncu's rule messages."""
    # The views alone: the same `build_view` the typed profile carries, without the SASS
    # listing and the every-metric table that only writeup and diff read (three times the time).
    views = report_views(report, kernel_regex)
    text = render_view(views, fmt, details)  # type: ignore[arg-type]
    if holds_bad_text(text):
        raise ReportError(f"{report} is corrupt: it holds text that is not UTF-8")
    # names from the report (kernels, rule messages) reach a terminal: no ESC, no U+202E
    click.echo(text if fmt == "json" else printable(text, keep_lines=True), nl=False)
