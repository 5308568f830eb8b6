"""`ncuh export` of one report: its table kept under the user cache, or made in parts.

The CSV or JSON text is what `write_export` writes; it is kept (`read_cache.keep_text`) under
a key of the report's bytes, the reader, the format and the kernel filter, and read back while
they are unchanged.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from harness.errors import NcuhError
from harness.report import read_cache
from harness.report.export_format import ExportFormat, export_text
from harness.report.reportfile import check_report_file, export_columns


def exported_text(report: Path, kernel_regex: str | None = None,
                  fmt: ExportFormat = "csv") -> tuple[str, int]:
    """The export of one report as `write_export` writes it, and its row count; kept
    (`read_cache`) and read back while the report and this reader are unchanged."""
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


MIN_JOBS = 4  # cores from which an export is made in parts


def _export(report: Path, kernel_regex: str | None, fmt: ExportFormat) -> tuple[str, int]:
    """The export read from the report: a CSV in one part per core (forked processes, from
    `MIN_JOBS` cores) where this process may fork, else here."""
    # imported here: a kept export needs neither (nor `harness.profile`, which parts import)
    from harness.report.builder import may_fork
    from harness.report.metrics_export import csv_in_parts

    jobs = min(os.cpu_count() or 1, 8)
    # Each part opens the whole report and asks the units before its slice: on two cores
    # that costs about what the second core saves (and more when the cores are shared).
    if fmt == "csv" and jobs >= MIN_JOBS and may_fork() and hasattr(os, "fork"):
        check_report_file(report)  # a bad file is told here, in one line, not in a child
        try:
            return csv_in_parts(report, kernel_regex, jobs)
        except NcuhError:
            pass  # a part that failed: read here, where the failure is told as it is
    table = export_columns(report, kernel_regex=kernel_regex)
    return export_text(table, fmt), len(table)
