"""`ncuh report REPORT`: ncu's "Profiling Results" view of any report, on any machine."""

from __future__ import annotations

from pathlib import Path

import click

from harness.errors import ReportError
from harness.input_file import holds_bad_text
from harness.report.report_view import VIEW_FORMATS, render, report_views


@click.command()
@click.argument("report", type=click.Path(path_type=Path))
@click.option("-k", "--kernel", "kernel_regex", default=None,
              help="Only kernels whose name matches REGEX (re.search).")
@click.option("--format", "fmt", type=click.Choice(VIEW_FORMATS), default="text",
              show_default=True)
def report(report: Path, kernel_regex: str | None, fmt: str) -> None:
    """Print each kernel's sections (metric, unit, value) and ncu's rule messages."""
    text = render(report_views(report, kernel_regex), fmt)  # type: ignore[arg-type]
    if holds_bad_text(text):
        raise ReportError(f"{report} is corrupt: it holds text that is not UTF-8")
    click.echo(text, nl=False)
