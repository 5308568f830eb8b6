"""Every kernel launch of a program's first pass, read from ncu's own raw CSV page.

The first pass (`harness.profile.two_pass`) leaves a report holding one result per launch with
a single metric, `gpu__time_duration.sum`. ncu turns it into text itself (`ncu --import R
--csv --page raw`), so this stage reads the launches without ncu_report: the ID (ncu's launch
order), the process, the device, the kernel's name, its grid and block, its duration and, where
ncu recorded them (`--nvtx`), its thread's NVTX push/pop ranges.
The page is asked for twice: with the names demangled as ncu prints them (what people read)
and mangled (what `--kernel-name-base mangled -k` matches exactly, whatever the demangler).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from harness.errors import NcuhError
from harness.profile.nvtx_spans import Range, push_pop_stack

DURATION = "gpu__time_duration.sum"
# ncu's time units in the raw page's unit row, in nanoseconds (display units or --print-units
# base)
_TIME_UNITS: dict[str, float] = {
    "ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0,
    "us": 1e3, "usecond": 1e3, "microsecond": 1e3,
    "ms": 1e6, "msecond": 1e6, "millisecond": 1e6,
    "s": 1e9, "second": 1e9,
}
_DIM3 = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")
_COLUMNS = ("ID", "Kernel Name", "Block Size", "Grid Size", DURATION)

Dim3 = tuple[int, int, int]


class LaunchTableError(NcuhError):
    """ncu's raw page of a first pass that does not read as one row per launch."""


@dataclass(frozen=True)
class Launch:
    """One kernel launch as ncu's raw page lists it."""

    id: int  # ncu's result ID: the order it profiled the launches in
    name: str  # as the export was asked to print it (demangled, as ncu prints it)
    grid: Dim3
    block: Dim3
    duration_ns: float
    process: int | None = None  # the process that launched it
    device: int | None = None  # ncu's device ID
    mangled: str = ""  # its mangled name (`with_mangled`); "" where unknown
    ranges: tuple[Range, ...] = ()  # its thread's NVTX push/pop ranges, outermost first


NameBase = Literal["demangled", "mangled"]


def export_argv(ncu: Path | str, report: Path | str, names: NameBase = "demangled"
                ) -> list[str]:
    """ncu's raw page of `report` as CSV, durations in nanoseconds, names as `names` says."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "raw",
            "--print-units", "base", "--print-kernel-base", names, "--metrics", DURATION]


def _table_text(output: str) -> str:
    """The CSV part of what ncu printed: from the header row on, without ncu's own `==`
    lines (a warning may come on the same stream)."""
    lines = output.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        raise LaunchTableError("the first pass's launch table has no header row "
                               "(ncu printed no raw page)")
    return "".join(line for line in lines[start:] if not line.startswith("=="))


def _dim3(text: str, what: str, row: int) -> Dim3:
    match = _DIM3.match(text.strip())
    if match is None:
        raise LaunchTableError(f"launch table row {row}: {what} {text!r} is not (x, y, z)")
    x, y, z = (int(part) for part in match.groups())
    return x, y, z


def _number(text: str, what: str, row: int) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise LaunchTableError(f"launch table row {row}: {what} {text!r} is not a number"
                               ) from None


def _optional_int(record: dict[str, str], column: str) -> int | None:
    value = (record.get(column) or "").strip()
    return int(value) if value.isdigit() else None


def read_launches(output: str) -> list[Launch]:
    """The launches of ncu's raw CSV page, in ncu's order; `LaunchTableError` when it is
    not one (a missing column, a unit that is not time, a malformed cell)."""
    rows = list(csv.reader(io.StringIO(_table_text(output))))
    header, units, body = rows[0], rows[1] if len(rows) > 1 else [], rows[2:]
    missing = [column for column in _COLUMNS if column not in header]
    if missing:
        raise LaunchTableError(f"the launch table lacks {', '.join(missing)}")
    unit = units[header.index(DURATION)].strip() if units else ""
    scale = _TIME_UNITS.get(unit)
    if scale is None:
        raise LaunchTableError(f"the launch table gives {DURATION} in {unit!r}, not a time")
    stacks = next((column for column in header if "Push/Pop_Range" in column), None)
    launches = []
    for number, cells in enumerate(body, start=3):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise LaunchTableError(f"launch table row {number}: {len(cells)} cells, "
                                   f"{len(header)} columns")
        record = dict(zip(header, cells, strict=True))
        launches.append(Launch(
            id=int(_number(record["ID"], "ID", number)),
            name=record["Kernel Name"],
            grid=_dim3(record["Grid Size"], "grid", number),
            block=_dim3(record["Block Size"], "block", number),
            duration_ns=_number(record[DURATION], DURATION, number) * scale,
            process=_optional_int(record, "Process ID"),
            device=_optional_int(record, "Device"),
            ranges=push_pop_stack(record[stacks]) if stacks is not None else (),
        ))
    return sorted(launches, key=lambda launch: launch.id)



def with_mangled(launches: list[Launch], mangled: list[Launch]) -> list[Launch]:
    """`launches` with the mangled names of the same launches (the same IDs, grids and blocks,
    from the page printed with mangled names); `LaunchTableError` when the two disagree."""
    by_id = {launch.id: launch for launch in mangled}
    named = []
    for launch in launches:
        twin = by_id.get(launch.id)
        if twin is None or (twin.grid, twin.block) != (launch.grid, launch.block):
            raise LaunchTableError(f"the launch tables with demangled and mangled names differ "
                                   f"at launch {launch.id}")
        named.append(replace(launch, mangled=twin.name))
    return named
