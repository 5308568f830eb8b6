"""Read an input file only when it is one: a regular file, checked with `os.stat` first.

Opening a FIFO blocks until someone writes to it and reading a device can last forever, so
anything but a regular file is refused before it is opened; a path the OS cannot even look
up (too long, a component that is a file) is one line too. JSON and TOML are parsed only up to
`MAX_JSON_DEPTH` levels of nesting, so no document can exhaust the parser's recursion.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import InputFileError, NcuhError, os_error_text

# No file ncuh reads nests deeper than a handful of levels; Python's parser (and whatever walks
# the result) recurses once per level, so a deeper document is refused before it is parsed.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def regular_file(path: Path | str, what: str) -> os.stat_result:
    """The stat of `path`; `InputFileError` (one line) unless it is a readable regular file."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        packed = path.with_name(path.name + ".xz")
        hint = f" (packed beside it as {packed.name}: unpack it with `xz -dk`)" if (
            packed.is_file()) else ""
        raise InputFileError(f"{what} not found: {path}{hint}") from None
    except OSError as error:
        raise InputFileError(f"cannot read {what} {path}: {os_error_text(error)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{path} is {file_kind(info.st_mode)}, not a {what} file")
    return info


def read_text(path: Path | str, what: str) -> str:
    """The UTF-8 text of a regular file; `InputFileError` (one line) for anything else."""
    regular_file(path, what)
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputFileError(f"cannot read {what} {path}: {os_error_text(error)}") from None
    except UnicodeDecodeError as error:
        raise InputFileError(f"{path}: {what} is not UTF-8 text ({error.reason})") from None


def column_holds_bad_text(values: Iterable[object]) -> bool:
    """`holds_bad_text` for a flat column (an export's 60,000 values and more): only its
    strings can be bad, so they alone are encoded, distinct ones once and together, which is
    ten times faster than walking every value."""
    texts = {value for value in values if isinstance(value, str)}
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def holds_bad_text(value: object) -> bool:
    """True when a string anywhere in `value` (dataclasses, mappings and sequences included)
    cannot be written as UTF-8: ncu_report hands out undecodable bytes of a corrupt report as
    lone surrogates, which would otherwise fail in the middle of writing an output."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(holds_bad_text(k) or holds_bad_text(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(holds_bad_text(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(holds_bad_text(getattr(value, f.name)) for f in dataclasses.fields(value)
                   if f.repr)
    return False


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of JSON `text` nest (strings skipped), counted
    without recursion; a malformed text gets some number and fails in the parser."""
    depth = deepest = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group(0) in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def nesting(value: object) -> int:
    """How deeply the lists and dicts of a parsed document nest, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1)
                         for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def load_toml(text: str, what: str, error: type[NcuhError] = InputFileError) -> dict[str, Any]:
    """TOML `text` parsed, or `error` (one line): a syntax error, or nested over
    MAX_JSON_DEPTH (tomllib recurses per `[` or `{`; dotted keys nest without it)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as problem:
        raise error(f"{what}: TOML syntax error: {problem}") from None
    except RecursionError:
        data = None
    if data is None or nesting(data) > MAX_JSON_DEPTH:
        raise error(f"{what}: TOML nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def load_json(text: str, what: str, error: type[NcuhError] = InputFileError) -> object:
    """JSON `text` parsed, or `error` (one line): not JSON, or nested over MAX_JSON_DEPTH."""
    if json_depth(text) > MAX_JSON_DEPTH:
        raise error(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except ValueError as problem:  # JSONDecodeError, and a number too long to convert
        raise error(f"{what}: not valid JSON ({problem})") from None
