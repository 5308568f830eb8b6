"""A regular expression the user gives (`--kernel regex:EXPR`), compiled once, its length
bounded, and a bad one one line."""

from __future__ import annotations

import re

from harness.errors import NcuhError

MAX_REGEX_CHARS = 1000  # a kernel filter is a name or a few alternatives


def compiled_kernel_regex(pattern: str, error: type[NcuhError]) -> re.Pattern[str]:
    """`pattern` compiled; `error` (one line) when it is longer than MAX_REGEX_CHARS or no
    regular expression."""
    if len(pattern) > MAX_REGEX_CHARS:
        raise error(f"--kernel regex of {len(pattern)} characters (at most {MAX_REGEX_CHARS})")
    try:
        return re.compile(pattern)
    # a repeat count over re's limit (`a{99999999999}`) is an OverflowError, deep nesting a
    # RecursionError: the pattern is bad either way
    except (re.error, OverflowError, RecursionError) as problem:
        raise error(f"bad --kernel regex {pattern!r}: {problem}") from None
