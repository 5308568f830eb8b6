"""Rows of a history store read back, every value checked, and runs bounded before they go in.

A store is data: a file or a database someone else may have written or damaged. Each value
read from it is checked for its type and its size before it is used, and a kernel's payload is
inflated only up to a bound (a zlib bomb is damage, not memory exhausted). What is wrong is a
`Damage` naming the field; the store turns it into one line that also names itself and the
run. What `add` writes is held to the same bounds first (`oversized`), so that every
store ncuh writes reads back, on SQLite as on PostgreSQL, whose columns enforce their lengths.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Column

from harness.diff import FailedEntry, KernelKey
from harness.history import tables
from harness.history.record import KernelRecord, RunRecord, Size, StoredRun
from harness.util import inflated

MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # packed; one kernel's payload is a few kilobytes
MAX_PAYLOAD_PLAIN_BYTES = 64 * 1024 * 1024
MAX_FAILED_CHARS = 1024 * 1024
MAX_SOURCE_CHARS = 4096  # a run directory's path
MAX_TEXT_CHARS = 64 * 1024  # a metric's name or unit, a rule's title, an error line
MAX_DIMS = 8
_SIZE = re.compile(r"[1-9][0-9]{0,18}(?:x[1-9][0-9]{0,18})*")


class Damage(ValueError):
    """A stored value that is not what ncuh writes; the message starts with its field."""


# the columns without a length of their own
_UNSIZED = {"source": MAX_SOURCE_CHARS, "failed": MAX_FAILED_CHARS,
            "payload": MAX_PAYLOAD_BYTES, "manifest": MAX_PAYLOAD_BYTES}


def limit(column: Column[Any]) -> int:
    """The most characters (bytes for a payload) a column's value may have."""
    return getattr(column.type, "length", None) or _UNSIZED.get(column.name, MAX_TEXT_CHARS)


def text(value: object, field: str, limit: int, optional: bool = False) -> str | None:
    """`value` as stored text of at most `limit` characters (None allowed if `optional`)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise Damage(f"{field}: {_kind(value)}, not text")
    if not value and not optional:
        raise Damage(f"{field}: empty")
    if len(value) > limit:
        raise Damage(f"{field}: {len(value):,} characters (at most {limit:,})")
    return value


def number(value: object, field: str) -> float:
    """`value` as a finite number (JSON's int or float; not a bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Damage(f"{field}: {_kind(value)}, not a number")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise Damage(f"{field}: {str(value)[:40]} is not a finite number")
    return result


def _number_map(value: object, field: str) -> dict[str, float]:
    """A JSON object of names and finite numbers (the common case checked at once: a store
    holds thousands of them)."""
    result = {}
    for key, item in _mapping(value, field).items():
        if type(item) is float and item - item == 0.0 and len(key) <= MAX_TEXT_CHARS:
            result[key] = item  # finite: inf - inf and nan - nan are nan
        else:
            text(key, f"{field} name", MAX_TEXT_CHARS)
            result[key] = number(item, f"{field}[{_shown(key)}]")
    return result


def _text_map(value: object, field: str) -> dict[str, str]:
    """A JSON object of names and texts."""
    result = {}
    for key, item in _mapping(value, field).items():
        if type(item) is not str or len(key) > MAX_TEXT_CHARS or len(item) > MAX_TEXT_CHARS:
            text(key, f"{field} name", MAX_TEXT_CHARS)
            item = str(text(item, f"{field}[{_shown(key)}]", MAX_TEXT_CHARS, optional=True) or "")
        result[key] = item
    return result


def _number_list(value: object, field: str) -> tuple[float, ...]:
    items = _list(value, field)
    if all(type(x) is float and x - x == 0.0 for x in items):
        return tuple(items)
    return tuple(number(x, f"{field}[{i}]") for i, x in enumerate(items))


def whole(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise Damage(f"{field}: {_kind(value)}, not a whole number from 0 to 2^31")
    return value


def _kind(value: object) -> str:
    if isinstance(value, str):
        return f"the text {_shown(value)}"
    if value is None:
        return "nothing"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "...")


def _column(row: Mapping[str, Any], column: Column[Any], optional: bool) -> str | None:
    return text(row[column.name], column.name, limit(column), optional)


def schema_version(value: object) -> int:
    """The stored schema version: a whole number."""
    return whole(value, "version")


def size(value: str | None, field: str = "size") -> Size | None:
    """A stored size, "1024x1024x1024", as numbers; None for a user program's kernel."""
    if value is None:
        return None
    if not _SIZE.fullmatch(value) or value.count("x") >= MAX_DIMS:
        raise Damage(f"{field}: {_shown(value)} is not a size like 1024x1024x1024")
    return tuple(int(n) for n in value.split("x"))


def payload(blob: object) -> dict[str, Any]:
    """A kernel's payload: zlib-packed JSON of at most the bounds, holding every key."""
    if isinstance(blob, memoryview):
        blob = blob.tobytes()
    if not isinstance(blob, bytes):
        raise Damage(f"payload: {_kind(blob)}, not bytes")
    if len(blob) > MAX_PAYLOAD_BYTES:  # the query reads one byte more than the bound
        raise Damage(f"payload: {len(blob):,} bytes (at most {MAX_PAYLOAD_BYTES:,})")
    plain = inflated(blob, MAX_PAYLOAD_PLAIN_BYTES)
    if plain is None:
        raise Damage(f"payload: not zlib data of at most {MAX_PAYLOAD_PLAIN_BYTES:,} bytes")
    data = _json(plain, "payload")
    if not isinstance(data, dict):
        raise Damage("payload: not a JSON object")
    missing = [key for key in ("cc", "metrics", "units", "rules", "samples_ms")
               if key not in data]
    if missing:
        raise Damage(f"payload: no {', '.join(missing)}")
    return data


def _json(plain: bytes, field: str) -> object:
    """JSON bytes parsed. A store is read whole, thousands of payloads at a time, so they are
    not first scanned for their depth as an input file is (`load_json`): the parser's own
    recursion limit stops a deep document, and every value is then checked against the shape
    ncuh writes, which refuses anything nested where it is not."""
    try:
        return json.loads(plain.decode("utf-8"))
    except UnicodeDecodeError:
        raise Damage(f"{field}: not UTF-8 text") from None
    except RecursionError:
        raise Damage(f"{field}: JSON nested too deeply") from None
    except ValueError as problem:  # JSONDecodeError, and a number too long to convert
        raise Damage(f"{field}: not valid JSON ({problem})") from None


def _mapping(value: object, field: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise Damage(f"{field}: {_kind(value)}, not a JSON object")
    return value


def _list(value: object, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise Damage(f"{field}: {_kind(value)}, not a JSON list")
    return value


def _rule(value: object, field: str) -> dict[str, Any]:
    rule = _mapping(value, field)
    speedup = rule.get("speedup_pct")
    return {"name": text(rule.get("name"), f"{field}.name", MAX_TEXT_CHARS),
            "title": text(rule.get("title"), f"{field}.title", MAX_TEXT_CHARS),
            "type": text(rule.get("type"), f"{field}.type", MAX_TEXT_CHARS),
            "speedup_pct": None if speedup is None else number(speedup, f"{field}.speedup_pct")}


def kernel(row: Mapping[str, Any]) -> KernelRecord:
    """A row of `ncuh_kernels` as the kernel it records."""
    c = tables.kernels.c
    data = payload(row["payload"])
    return KernelRecord(
        name=str(_column(row, c.name, optional=False)),
        size=size(_column(row, c.size, optional=True)),
        ordinal=whole(row["ordinal"], "ordinal"),
        function=_column(row, c.function, optional=True),
        device=_column(row, c.device, optional=True),
        compute_capability=text(data["cc"], "payload cc", limit(tables.runs.c.compute_capability),
                                optional=True),
        metrics=_number_map(data["metrics"], "payload metrics"),
        units=_text_map(data["units"], "payload units"),
        rules=tuple(_rule(r, f"payload rules[{i}]")
                    for i, r in enumerate(_list(data["rules"], "payload rules"))),
        samples_ms=_number_list(data["samples_ms"], "payload samples_ms"),
    )


def failed(value: object) -> tuple[FailedEntry, ...]:
    """The `failed` column: the run's entries that produced no report."""
    stored = text(value, "failed", MAX_FAILED_CHARS)
    entries = []
    for i, item in enumerate(_list(_json(str(stored).encode(), "failed"), "failed")):
        field = f"failed[{i}]"
        entry = _mapping(item, field)
        key = _mapping(entry.get("key"), f"{field}.key")
        dims = key.get("size")
        shape = None if dims is None else tuple(
            int(number(n, f"{field}.key.size")) for n in _list(dims, f"{field}.key.size"))
        if shape is not None and (len(shape) > MAX_DIMS or any(n < 1 for n in shape)):
            raise Damage(f"{field}.key.size: {list(shape)} is not a size")
        entries.append(FailedEntry(
            str(text(entry.get("label"), f"{field}.label", limit(tables.kernels.c.name))),
            KernelKey(str(text(key.get("name"), f"{field}.key.name",
                               limit(tables.kernels.c.name))),
                      shape or None, whole(key.get("ordinal"), f"{field}.key.ordinal")),
            str(text(entry.get("error"), f"{field}.error", MAX_TEXT_CHARS, optional=True) or "")))
    return tuple(entries)


def run(row: Mapping[str, Any]) -> StoredRun:
    """A row of `ncuh_runs`, every value checked (its kernels are read apart)."""
    c = tables.runs.c
    return StoredRun(
        id=whole(row["id"], "id"),
        commit=str(_column(row, c.commit_sha, optional=False)),
        branch=_column(row, c.branch, optional=True),
        tag=_column(row, c.tag, optional=True),
        project=_column(row, c.project, optional=True),
        gpu=_column(row, c.gpu, optional=True),
        compute_capability=_column(row, c.compute_capability, optional=True),
        ncu_version=_column(row, c.ncu_version, optional=True),
        started_at=_column(row, c.started_at, optional=True),
        added_at=str(_column(row, c.added_at, optional=False)),
        source=str(_column(row, c.source, optional=False)),
        kernels=(),
        failed=failed(row["failed"]),
    )


def oversized(record: RunRecord, commit: str, branch: str | None, tag: str | None) -> str | None:
    """What of a run would not fit the store (the columns' lengths), naming the run and the
    value; None when it all fits. A run is refused whole, on every engine alike."""
    r, k = tables.runs.c, tables.kernels.c
    values: list[tuple[str, object, int]] = [
        ("--commit", commit, limit(r.commit_sha)), ("--branch", branch, limit(r.branch)),
        ("--tag", tag, limit(r.tag)), ("project name", record.project, limit(r.project)),
        ("GPU name", record.gpu, limit(r.gpu)),
        ("compute capability", record.compute_capability, limit(r.compute_capability)),
        ("ncu version", record.ncu_version, limit(r.ncu_version)),
        ("started_at", record.started_at, limit(r.started_at)),
        ("path", str(record.source), MAX_SOURCE_CHARS)]
    for entry in record.kernels:
        values += [("kernel name", entry.name, limit(k.name)),
                   ("function name", entry.function, limit(k.function)),
                   ("device name", entry.device, limit(k.device))]
    values += [("failed entry", f.label, limit(k.name)) for f in record.failed]
    for what, value, most in values:
        if value is not None and not isinstance(value, str):
            return f"{record.source}: the {what} is {_kind(value)}, not text"
        if value is not None and len(value) > most:
            return (f"{record.source}: a {what} of {len(value):,} characters (at most "
                    f"{most:,}): {_shown(value)}")
    return None
