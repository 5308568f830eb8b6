"""`ncuh export` of one report: its table kept under the user cache, or made in parts.

The CSV or JSON text is what `write_export` writes; from the second export of the same report
on, it is kept (`read_cache.keep_text`) under a key of the report's bytes, the reader, the
format and the kernel filter, and read back while they are unchanged. It stays UTF-8 bytes
from where it is made to where it is written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.report import read_cache
from harness.report.export_format import Exported, ExportFormat, export_text, pack_piece
from harness.report.reportfile import export_columns
from harness.util import cache_wanted, usable_cores


def exported(report: Path, kernel_regex: str | None = None,
             fmt: ExportFormat = "csv") -> Exported:
    """The export of one report as `write_export` writes it; kept (`read_cache`) and read back
    while the report and this reader are unchanged."""
    report_key = read_cache.report_key(report) if cache_wanted() else None
    key = None
    if report_key is not None:
        asked = f"{report_key}|export|{fmt}|{kernel_regex!r}".encode()
        key = hashlib.sha256(asked).hexdigest()[:40]
        kept = read_cache.fetch_text(key)
        rows, _, text = (kept or b"").partition(b"\n")
        if kept is not None and rows.isdigit():
            return Exported([text], int(rows))
    # kept from its second asking on (`read_cache.asked_again`): a first export packs nothing
    made = _export(report, kernel_regex, fmt,
                   pack=key is not None and read_cache.asked_again(key))
    if key is not None and made.packed is not None:
        read_cache.keep_text(key, made.packed)
    return made


def _export(report: Path, kernel_regex: str | None, fmt: ExportFormat, pack: bool) -> Exported:
    """The export read from the report: a CSV in one part per core (at most 8), a JSON here."""
    if fmt == "csv":
        from harness.report.export_lines import export_csv

        return export_csv(report, kernel_regex, jobs=min(usable_cores(), 8), pack=pack)
    table = export_columns(report, kernel_regex=kernel_regex)
    text = export_text(table, fmt).encode()
    rows = len(table)
    packed: list[bytes] | None = (
        [pack_piece(f"{rows}\n".encode() + text)] if pack else None)
    return Exported([text], rows, packed)

