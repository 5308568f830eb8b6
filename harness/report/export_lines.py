"""`ncuh export`'s CSV of one report: formatted a metric at a time, read in forked parts.

`csv.writer` formats every cell of every row. An export's rows repeat their metric's kernel,
name and unit on every instance, and nearly all of its instance labels and values are numbers,
so each metric's repeated cells are formatted once and each instance row is one f-string. A
text cell is what `spreadsheet_text` makes of it, quoted by csv.writer where it holds a
character csv may quote (`csv_cell`, tested against `csv.writer`): the text is the one
`write_export` writes, byte for byte.

A report is opened once, its kernels not yet decoded. Processes forked from the one that opened
it (ncu_report keeps no threads, so a fork copies a whole, quiet reader) then each take the next
kernel from a pipe, decode it and write its lines, until none is left; the pieces are joined in
report order. Each piece is packed (zlib) where it was made when the export is to be kept. A
report of fewer kernels than processes is decoded first and split by rows instead.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import signal
import struct
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ReportError
from harness.report.export_format import Exported, packed_piece, spreadsheet_text
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
from harness.util import column_holds_bad_text, pause_at

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
    texts: set[str] = set()
    cells: dict[str, str] = {}
    for record in metric_records(kernels, import_ncu_report(), part):
        lines += record_lines(record, cells)
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
    return "".join(lines), len(lines)


def may_fork_now() -> bool:
    """Whether a child forked here is a safe copy: no other thread may hold a lock it needs."""
    return hasattr(os, "fork") and threading.active_count() == 1


@dataclass(frozen=True)
class _Piece:
    """One piece of the export: its CSV bytes, their packed stream (b"" unpacked), its rows."""

    data: bytes
    packed: bytes
    rows: int


def export_csv(report_path: Path, kernel_regex: str | None, jobs: int,
               pack: bool = False) -> Exported:
    """The CSV of one report (header included), made by `jobs` processes at once where this
    process may fork, else here; with `pack`, each piece is also packed where it was made."""
    context, places = load_context(report_path)
    jobs = jobs if may_fork_now() else 1
    if kernel_regex is None and len(places) >= jobs > 1:
        # A piece per kernel, taken by whichever process is free: each decodes and checks only
        # the kernels it takes, and asks their units from their first metric on, as a reading
        # of one kernel alone does (a kernel's size is not known before it is decoded).
        def kernel_piece(index: int) -> _Piece:
            kernel = kernel_ref(report_path, context, index, places[index])
            return _piece([kernel], (0, 1), report_path, pack)

        return _whole(_shared(len(places), kernel_piece, jobs), pack)
    kernels = [kernel_ref(report_path, context, i, place) for i, place in enumerate(places)]
    kernels = select_kernels(LoadedReport(report_path, context, kernels), kernel_regex)
    if jobs <= 1:
        return _whole([_piece(kernels, (0, 1), report_path, pack)], pack)
    # Fewer kernels than processes (or a filter, which reads every name): the kernels are
    # decoded here, then split by rows (`metric_records` asks the units before a part's start).
    return _whole(_shared(jobs, lambda index: _piece(kernels, (index, jobs), report_path, pack),
                          jobs), pack)


def _piece(kernels: list[KernelRef], part: ExportPart, where: Path, pack: bool) -> _Piece:
    text, rows = part_text(kernels, part, where)
    data = text.encode()
    return _Piece(data, packed_piece(data, pack) or b"", rows)


def _whole(pieces: list[_Piece], pack: bool) -> Exported:
    """The export of these pieces, in order, the header first; packed, a kept entry's parts
    (the row count and the header, then each piece's own stream)."""
    rows = sum(piece.rows for piece in pieces)
    head = HEADER.encode()
    data = [head, *(piece.data for piece in pieces)]
    if not pack:
        return Exported(data, rows)
    kept = [zlib.compress(f"{rows}\n".encode() + head, 1), *(piece.packed for piece in pieces)]
    return Exported(data, rows, kept)


def _shared(count: int, make: Callable[[int], _Piece], jobs: int) -> list[_Piece]:
    """Pieces 0..count-1 made by `jobs` processes at once, this one and forked children, each
    taking the next piece from a pipe of indices as it is free; in order."""
    taken, offered = os.pipe()
    made: dict[int, _Piece] = {}
    with tempfile.TemporaryDirectory(prefix="ncuh-export-") as scratch:
        children = [_fork_taker(taken, offered, make, Path(scratch) / f"{n}.pieces")
                    for n in range(1, jobs)]
        try:
            for index in range(count):  # 4 bytes a write: a pipe never splits one
                os.write(offered, _INDEX.pack(index))
            os.close(offered)
            offered = -1
            made.update(_take(taken, make))
            pause_at("export parts")
            for n, pid in enumerate(children, start=1):
                _, status = os.waitpid(pid, 0)
                children[n - 1] = 0  # reaped
                if os.waitstatus_to_exitcode(status) != 0:
                    # A piece that failed: made here, where its failure is told as it is.
                    continue
                made.update(_read_pieces(Path(scratch) / f"{n}.pieces"))
        finally:
            _end(children)
            for handle in (taken, offered):
                if handle >= 0:
                    os.close(handle)
    return [made[index] if index in made else make(index) for index in range(count)]


_INDEX = struct.Struct("<I")


def _take(taken: int, make: Callable[[int], _Piece]) -> Iterator[tuple[int, _Piece]]:
    """Make the pieces whose indices this process takes from the pipe, until it is empty."""
    while True:
        raw = os.read(taken, _INDEX.size)
        if not raw:
            return
        index = _INDEX.unpack(raw)[0]
        yield index, make(index)


def _fork_taker(taken: int, offered: int, make: Callable[[int], _Piece], out: Path) -> int:
    """A child that makes the pieces it takes and writes them to `out` (`_read_pieces` reads
    them); its pid."""
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        # Ctrl-C reaches the whole process group: it is the parent's to handle; SIGTERM and
        # SIGHUP end the child at once rather than run the parent's handlers.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.close(offered)  # else the pipe never ends for this child
        with out.open("wb") as stream:
            for index, piece in _take(taken, make):
                stream.write(f"{index} {piece.rows} {len(piece.data)} {len(piece.packed)}\n"
                             .encode())
                stream.write(piece.data)
                stream.write(piece.packed)
        status = 0
    finally:
        os._exit(status)  # never return into the parent's stack (its cleanups are its own)


def _read_pieces(path: Path) -> Iterator[tuple[int, _Piece]]:
    """The pieces a child wrote, with their indices."""
    data = memoryview(path.read_bytes())
    at = 0
    while at < len(data):
        end = bytes(data[at:at + 64]).index(b"\n") + at
        index, rows, size, packed = (int(n) for n in bytes(data[at:end]).split())
        at = end + 1
        yield index, _Piece(bytes(data[at:at + size]), bytes(data[at + size:at + size + packed]),
                            rows)
        at += size + packed


def _end(children: list[int]) -> None:
    """Kill and reap the children still running (an interrupt, or a failed part)."""
    for pid in children:
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
