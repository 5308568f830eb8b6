"""Serialize the `ncuh export` table (see `reportfile.export_metrics`) as CSV or JSON.

Written with the standard library from column lists rather than with
`DataFrame.to_csv/to_json`: `ncuh export` then never imports pandas (half a second of start-up),
and `to_json` rounds floats to 10 digits, which would break "equal to ncu".
"""

from __future__ import annotations

import csv
import io
import json
import math
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TextIO

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



@dataclass(frozen=True)
class Exported:
    """An export's text as UTF-8 pieces, in order, and its row count. Where it is to be
    kept, `packed` is the kept entry: the row count and the header packed (zlib), then each
    piece packed where it was made, one stream after another (`read_cache.keep_text` stores
    them as they are)."""

    pieces: list[bytes]
    rows: int
    packed: list[bytes] | None = None

    def write(self, stream: BinaryIO) -> None:
        for piece in self.pieces:
            stream.write(piece)


def pack_piece(piece: bytes) -> bytes:
    """`piece` packed as a kept export's part is: one zlib stream, at the fastest level."""
    return zlib.compress(piece, 1)
