"""Read an input file only when it is one: a regular file, checked with `os.stat` first.

Opening a FIFO blocks until someone writes to it and reading a device can last forever, so
anything but a regular file is refused before it is opened; a path the OS cannot even look
up (too long, a component that is a file) is one line too.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from harness.errors import InputFileError, os_error_text

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
        raise InputFileError(f"{what} not found: {path}") from None
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
