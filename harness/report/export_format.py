"""Serialize the `ncuh export` table (see `reportfile.export_metrics`) as CSV or JSON.

Written with the standard library from column lists rather than with
`DataFrame.to_csv/to_json`: `ncuh export` then never imports pandas (half a second of start-up),
and `to_json` rounds floats to 10 digits, which would break "equal to ncu".
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from harness.errors import NcuhError
from harness.report.reportfile import EXPORT_COLUMNS, ExportColumns

if TYPE_CHECKING:
    import pandas as pd

ExportFormat = Literal["csv", "json"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("csv", "json")


# A spreadsheet reads a cell that starts with one of these as a formula (`=HYPERLINK(...)` in a
# kernel name or a run's label); OWASP's advice is a leading apostrophe, which shows the text
# as written. Numbers stay numbers: only text cells that are not a number are changed.
_FORMULA_START = frozenset("=+-@\t\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def spreadsheet_text(value: Any) -> Any:
    """`value` as a CSV cell no spreadsheet takes for a formula."""
    if isinstance(value, str) and value[:1] in _FORMULA_START and not _is_number(value):
        return "'" + value
    return value


def spreadsheet_column(values: list[Any]) -> list[Any]:
    """`spreadsheet_text` over a column; each distinct text is looked at once, and a column
    with nothing to change (nearly all of them) is returned as it is."""
    risky = {value for value in set(values) if spreadsheet_text(value) is not value}
    if not risky:
        return values
    return [spreadsheet_text(value) if value in risky else value for value in values]


def _json_value(value: Any) -> Any:
    # JSON has no NaN/Infinity; ncu may report them for undefined ratios.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_export(
    table: ExportColumns | pd.DataFrame, stream: TextIO, fmt: ExportFormat = "csv"
) -> None:
    """Write the export table (kernel_id,kernel,metric,instance,value,unit) to `stream`.

    CSV: a header row, then one row per value; floats keep every digit (repr), a missing
    value is an empty cell, a text that a spreadsheet would run as a formula gets a leading
    apostrophe. JSON: an array of objects with the same keys, as they are.
    """
    if isinstance(table, ExportColumns):
        columns = table.columns()
    else:
        columns = [table[name].tolist() for name in EXPORT_COLUMNS]
    if fmt == "csv":
        columns = [spreadsheet_column(column) for column in columns]
    rows = zip(*columns, strict=True)
    if fmt == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        writer.writerows(rows)
    elif fmt == "json":
        keys = list(EXPORT_COLUMNS)
        value_index = keys.index("value")
        stream.write("[")
        for number, row in enumerate(rows):
            record = dict(zip(keys, row, strict=True))
            record["value"] = _json_value(row[value_index])
            stream.write(",\n" if number else "\n")
            stream.write(json.dumps(record, ensure_ascii=False))
        stream.write("\n]\n")
    else:
        raise ValueError(f"unknown export format {fmt!r}")


def export_text(table: ExportColumns | pd.DataFrame, fmt: ExportFormat = "csv") -> str:
    """`write_export` into a string."""
    buffer = io.StringIO()
    write_export(table, buffer, fmt)
    return buffer.getvalue()


def exported_text(report: Path, kernel_regex: str | None = None,
                  fmt: ExportFormat = "csv") -> tuple[str, int]:
    """The export of one report as `write_export` writes it, and its row count; kept
    (`read_cache`) and read back while the report and this reader are unchanged."""
    from harness.report import read_cache

    report_key = read_cache.report_key(report) if read_cache.wanted() else None
    key = None
    if report_key is not None:
        asked = f"{report_key}|export|{fmt}|{kernel_regex!r}".encode()
        key = hashlib.sha256(asked).hexdigest()[:40]
        kept = read_cache.fetch_text(key)
        rows, _, text = (kept or "").partition("\n")
        if kept is not None and rows.isdigit():
            return text, int(rows)
    text, rows = _export(report, kernel_regex, fmt)
    if key is not None:
        read_cache.keep_text(key, f"{rows}\n{text}")
    return text, rows


def _export(report: Path, kernel_regex: str | None, fmt: ExportFormat) -> tuple[str, int]:
    """The export read from the report: a CSV in one part per core (forked processes) where
    this process may fork, else here."""
    from harness.report.builder import may_fork
    from harness.report.metrics_export import csv_in_parts
    from harness.report.reportfile import check_report_file, export_columns

    jobs = min(os.cpu_count() or 1, 8)
    if fmt == "csv" and jobs > 1 and may_fork() and hasattr(os, "fork"):
        check_report_file(report)  # a bad file is told here, in one line, not in a child
        try:
            return csv_in_parts(report, kernel_regex, jobs)
        except NcuhError:
            pass  # a part that failed: read here, where the failure is told as it is
    table = export_columns(report, kernel_regex=kernel_regex)
    return export_text(table, fmt), len(table)
