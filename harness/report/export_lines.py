"""`ncuh export`'s CSV of one report: formatted a metric at a time, read in pieces at once.

An export's rows repeat their metric's kernel, name and unit on every instance, and nearly all
of its labels and values are numbers: each metric's repeated cells are formatted once and each
instance row is one f-string. A text cell is what `spreadsheet_text` makes of it, quoted by
csv.writer where it holds a character csv may quote (`csv_cell`, tested against csv.writer):
the bytes are those `write_export` writes.

The report is opened once, its kernels not yet decoded; workers forked from this one (which
ncu_report leaves without threads until SASS is listed) each take the next kernel as they are
free (`harness.util.parallel_map`), decode it and format it, packing it (zlib) where it is to
be kept. A report of fewer kernels than workers is decoded first and split by rows instead.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ReportError
from harness.report.export_format import Exported, pack_piece, spreadsheet_text
from harness.report.ncu_import import import_ncu_report
from harness.report.reportfile import (
    EXPORT_COLUMNS,
    ExportPart,
    KernelRef,
    LoadedReport,
    MetricRecord,
    kernel_ref,
    load_context,
    metric_records,
    select_kernels,
)
from harness.util import column_holds_bad_text, parallel_map

HEADER = ",".join(EXPORT_COLUMNS) + "\n"
# A text cell with one of these is quoted by csv.writer, or not, as its Python decides (3.11
# leaves a lone carriage return bare where later ones quote it): csv.writer formats it.
_SPECIAL = re.compile(r'[,"\r\n]')
_ONE_CELL = io.StringIO()
_ONE_CELL_WRITER = csv.writer(_ONE_CELL, lineterminator="\n")


def csv_cell(value: Any) -> str:
    """One cell as `write_export`'s csv.writer writes it (after `spreadsheet_text`)."""
    if value is None:
        return ""
    if isinstance(value, str):
        value = spreadsheet_text(value)
        return _as_csv_writes(value) if _SPECIAL.search(value) else value
    return str(value)  # an int, or a float (whose str is its repr, as csv writes it)


def _as_csv_writes(text: str) -> str:
    _ONE_CELL.seek(0)
    _ONE_CELL.truncate()
    # with an empty second cell: a row of one empty cell would be written '""'
    _ONE_CELL_WRITER.writerow([text, ""])
    return _ONE_CELL.getvalue()[:-2]


def record_lines(record: MetricRecord, cells: dict[str, str]) -> list[str]:
    """The CSV lines of one metric: its aggregate row, then one per instance. `cells` keeps
    the cells of the texts that repeat over metrics (kernel names, units)."""
    kernel = cells.get(record.kernel)
    if kernel is None:
        kernel = cells[record.kernel] = csv_cell(record.kernel)
    unit = cells.get(record.unit)
    if unit is None:
        unit = cells[record.unit] = csv_cell(record.unit)
    lead = f"{record.kernel_id},{kernel},{csv_cell(record.metric)},"
    tail = f",{unit}\n"
    lines = [f"{lead},{csv_cell(record.value)}{tail}"]
    if not record.values:
        return lines
    labels = record.labels if record.plain_labels else [csv_cell(x) for x in record.labels]
    values = record.values
    if not record.plain_values or None in values:
        values = [csv_cell(v) for v in values]
    lines += [f"{lead}{label},{value}{tail}" for label, value in zip(labels, values, strict=True)]
    return lines


def part_text(kernels: Iterable[KernelRef], part: ExportPart, where: Path) -> tuple[str, int]:
    """The lines of one part of the export and their count; `ReportError` if a text in it is
    not UTF-8 (a corrupt report's bytes, which ncu_report hands out as lone surrogates)."""
    lines: list[str] = []
    rows = 0
    texts: set[str] = set()
    cells: dict[str, str] = {}
    for record in metric_records(kernels, import_ncu_report(), part):
        metric_lines = record_lines(record, cells)
        rows += len(metric_lines)
        lines.append("".join(metric_lines))  # one text a metric: fewer objects alive
        texts.add(record.kernel)
        texts.add(record.unit)
        if not record.plain_labels:
            texts.update(record.labels)
        if isinstance(record.value, str):
            texts.add(record.value)
        if not record.plain_values:
            texts.update(value for value in record.values if isinstance(value, str))
    if column_holds_bad_text(texts):
        raise ReportError(f"{where} is corrupt: it holds text that is not UTF-8")
    return "".join(lines), rows


@dataclass(frozen=True)
class _Piece:
    """One piece of the export: its CSV bytes, their packed stream (b"" unpacked), its rows."""

    data: bytes
    packed: bytes
    rows: int


def export_csv(report_path: Path, kernel_regex: str | None, jobs: int,
               pack: bool = False) -> Exported:
    """The CSV of one report (header included), made by `jobs` forked workers at once, or here
    (one job, or no worker to be had); with `pack`, each piece is also packed where it was
    made."""
    context, places = load_context(report_path)
    if kernel_regex is None and len(places) >= jobs > 1:
        # A piece per kernel, taken by whichever process is free: each decodes and checks only
        # the kernels it takes, and asks their units from their first metric on, as a reading
        # of one kernel alone does (a kernel's size is not known before it is decoded).
        def kernel_piece(index: int) -> _Piece:
            kernel = kernel_ref(report_path, context, index, places[index])
            return _piece([kernel], (0, 1), report_path, pack)

        return _whole(parallel_map(kernel_piece, len(places), jobs), pack)
    kernels = [kernel_ref(report_path, context, i, place) for i, place in enumerate(places)]
    kernels = select_kernels(LoadedReport(report_path, context, kernels), kernel_regex)
    if jobs <= 1:
        return _whole([_piece(kernels, (0, 1), report_path, pack)], pack)
    # Fewer kernels than processes (or a filter, which reads every name): the kernels are
    # decoded here, then split by rows (`metric_records` asks the units before a part's start).
    return _whole(parallel_map(lambda index: _piece(kernels, (index, jobs), report_path, pack),
                               jobs, jobs), pack)


def _piece(kernels: list[KernelRef], part: ExportPart, where: Path, pack: bool) -> _Piece:
    text, rows = part_text(kernels, part, where)
    data = text.encode()
    return _Piece(data, pack_piece(data) if pack else b"", rows)


def _whole(pieces: list[_Piece], pack: bool) -> Exported:
    """The export of these pieces, in order, the header first; packed, a kept entry's parts
    (the row count and the header, then each piece's own stream)."""
    rows = sum(piece.rows for piece in pieces)
    head = HEADER.encode()
    data = [head, *(piece.data for piece in pieces)]
    if not pack:
        return Exported(data, rows)
    kept = [pack_piece(f"{rows}\n".encode() + head), *(piece.packed for piece in pieces)]
    return Exported(data, rows, kept)
