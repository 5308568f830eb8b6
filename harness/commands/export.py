"""`ncuh export REPORT|RUN`: every metric of every kernel as a tidy table (CSV or JSON).

A run directory exports all its reports in one CSV with a `label` column first: the
metrics.csv that `ncuh profile --metrics-csv` writes, made after the run instead.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

from harness.commands.options import kernel_option, out_alias_option, out_option
from harness.errors import NcuhError, printable
from harness.report import EXPORT_FORMATS, exported
from harness.rundir import is_run_directory
from harness.util import atomic_path, refuse_inputs


@click.command(short_help="Export every metric of a report or a run as CSV or JSON.")
@click.argument("report", type=click.Path(path_type=Path))
# A directory given as --out is refused in one line by atomic_path.
@out_option("Write here (atomically) instead of stdout. A symbolic link is written through "
            "(the file it points to is replaced); an existing file keeps its permissions.")
@out_alias_option
@click.option(
    "--format", "fmt", type=click.Choice(EXPORT_FORMATS), default=None,
    help="[default: json for an --out named *.json, else csv]")
@kernel_option
def export(report: Path, out: Path | None, output_alias: Path | None, fmt: str | None,
           kernel_regex: str | None) -> None:
    """Export every metric of REPORT as kernel_id,kernel,metric,instance,value,unit.

    Values are in ncu's base units; instanced metrics add one row per instance. REPORT may be
    a run directory: its reports in one CSV, a `label` column first (its metrics.csv).
    """
    output = out or output_alias
    asked = fmt
    if fmt is None:  # what the output's name asks for: no CSV in a file named .json
        fmt = "json" if output is not None and output.suffix.lower() == ".json" else "csv"
    # Nothing is written before the whole table is known to be readable: a bad report leaves
    # no file (an output file is written aside and renamed; stdout gets the table at once).
    if is_run_directory(report):
        # imported here: the run's pydantic models cost a report's export its start-up
        from harness.rundir import run_inputs

        if output is not None:
            refuse_inputs(output, run_inputs(report))
        if fmt != "csv":
            raise NcuhError(f"{report}: a run directory exports as CSV only (its metrics.csv)"
                            + (": name the output .csv" if asked is None else ""))
        _export_run(report, output, kernel_regex)
        return
    if output is not None:
        refuse_inputs(output, [report])
    made = exported(report, kernel_regex, fmt)  # type: ignore[arg-type]
    if output is None:
        buffer = getattr(sys.stdout, "buffer", None)  # a StringIO in place of stdout has none
        if buffer is None:
            sys.stdout.write(b"".join(made.pieces).decode())
            return
        sys.stdout.flush()
        made.write(buffer)
        return
    with atomic_path(output) as tmp, tmp.open("wb") as stream:
        made.write(stream)
    click.echo(printable(f"wrote {made.rows:,} rows to {output}"), err=True)


def _export_run(run_dir: Path, output: Path | None, kernel_regex: str | None) -> None:
    """Every report of a run in one CSV, a `label` column first: its metrics.csv, made as
    `ncuh profile --metrics-csv` makes it (`harness.report.export_metrics_csv`: each report read
    in processes of its own, in parts at once)."""
    from harness.report import export_metrics_csv
    from harness.rundir import load_run

    reports = [(entry.label, entry.report) for entry in load_run(run_dir).entries
               if entry.ok and entry.report is not None]
    if output is not None:
        rows = export_metrics_csv(output, reports, kernel_regex=kernel_regex)
        click.echo(printable(f"wrote {rows:,} rows to {output}"), err=True)
        return
    with tempfile.TemporaryDirectory(prefix="ncuh-export-") as folder:
        table = Path(folder) / "metrics.csv"
        export_metrics_csv(table, reports, kernel_regex=kernel_regex)
        with table.open(encoding="utf-8", newline="") as stream:
            shutil.copyfileobj(stream, sys.stdout)
