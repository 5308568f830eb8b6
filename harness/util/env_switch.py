"""The environment variables that switch a feature off (`NCUH_REPORT_CACHE=off`, ...)."""

from __future__ import annotations

import os

OFF_WORDS = ("off", "0", "no", "false")


def switched_off(variable: str) -> bool:
    """Whether `variable` is set to one of `OFF_WORDS` (any case, spaces around ignored)."""
    return os.environ.get(variable, "").strip().lower() in OFF_WORDS
