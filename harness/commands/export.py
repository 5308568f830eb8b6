"""`ncuh export REPORT`: every metric of every kernel as a tidy table (CSV or JSON)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.atomic import atomic_path
from harness.report.export_format import EXPORT_FORMATS, write_export
from harness.report.reportfile import export_columns


@click.command()
@click.argument("report", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),  # a directory here is refused in one line by atomic_path
    default=None,
    help="Write here (atomically) instead of stdout. A symbolic link is written through (the "
    "file it points to is replaced); an existing file keeps its permissions.",
)
@click.option(
    "--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="csv", show_default=True
)
@click.option("-k", "--kernel", "kernel_regex", default=None, help="Only kernels matching REGEX.")
def export(report: Path, output: Path | None, fmt: str, kernel_regex: str | None) -> None:
    """Export every metric of REPORT as kernel_id,kernel,metric,instance,value,unit.

    Values are in ncu's base units; instanced metrics add one row per instance.
    """
    # The whole table is built before anything is written, so a bad report leaves no file.
    table = export_columns(report, kernel_regex=kernel_regex)
    if output is None:
        write_export(table, sys.stdout, fmt)  # type: ignore[arg-type]
        return
    with atomic_path(output) as tmp, tmp.open("w", encoding="utf-8", newline="") as stream:
        write_export(table, stream, fmt)  # type: ignore[arg-type]
    click.echo(f"wrote {len(table):,} rows to {output}", err=True)
