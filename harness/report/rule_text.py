"""ncu's rule messages as plain text.

Rule messages carry link markup: `@section:WarpStateStats:Warp State Statistics@` names a
section and `@url:Profiling Guide:https://docs.nvidia.com/...@` a link. ncu's text output
prints the first as its label and the second as "label (url)"; so does ncuh.
"""

from __future__ import annotations

import re

_MARKUP = re.compile(r"@(?P<kind>[a-zA-Z_]+):(?P<body>[^@]*)@")

# ncu_report's MsgType values (MsgType_NONE 0, _OK 1, _OPTIMIZATION 2, _WARNING 3, _ERR 4) ->
# `RuleType`; ncu prints OK as "INF" (see `RuleResult.tag`).
RULE_TYPES = {0: "NONE", 1: "OK", 2: "OPT", 3: "WARN", 4: "ERROR"}
# ncu_report's SpeedupType values.
SPEEDUP_TYPES = {1: "local", 2: "global"}


def _replace(match: re.Match[str]) -> str:
    kind, body = match.group("kind"), match.group("body")
    if kind == "url":
        label, _, url = body.partition(":")
        return f"{label} ({url})" if url else label
    # section:<id>:<label>, and any other <kind>:<id>:<label>: the reader sees the label.
    return body.rsplit(":", 1)[-1] if ":" in body else body


def plain_text(message: str) -> str:
    """`message` with ncu's @kind:...@ link markup replaced by the words ncu prints.

    Inner spacing is kept as ncu keeps it (some messages hold double spaces); only the ends
    are stripped, since ncu's line wrapping drops them.
    """
    return _MARKUP.sub(_replace, message).strip()


def speedup_label(speedup_type: str | None) -> str:
    """ncu's wording: "Est. Local Speedup" for local estimates, else "Est. Speedup"."""
    return "Est. Local Speedup" if speedup_type == "local" else "Est. Speedup"


def format_speedup(speedup_pct: float) -> str:
    """Four significant digits, as ncu prints them (97.73%, 4.065%, 0.06121%, 25%)."""
    return f"{speedup_pct:.4g}%"
