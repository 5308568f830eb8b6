"""How a kernel's name and launch shape are written in tables, file names and keys.

Apart from `harness.rundir.ranking` so that `ncuh profile` names its reports without importing
the readers, whose pydantic models cost a start-up it pays before ncu runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_PARAMETERS = re.compile(r"\((?:[^()]|\([^()]*\))*\)\s*$")


def shape_text(dims: Sequence[int]) -> str:
    """(128, 1, 1) -> "128x1x1"."""
    return "x".join(str(n) for n in dims)


def short_name(name: str, width: int = 60) -> str:
    """A demangled name as a table shows it: no `void ` before it, no parameter list after
    it, cut to `width` characters with an ellipsis."""
    text = name.removeprefix("void ").strip()
    text = _PARAMETERS.sub("", text).strip() or text
    return text if len(text) <= width else text[:width - 1] + "…"
