"""Baseline-against-current comparison for CI (`ncuh diff`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.diff.compare import diff_runs
    from harness.diff.json_output import render_json
    from harness.diff.junit import render_junit
    from harness.diff.markdown import render_markdown, status_line

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "diff_runs": ("harness.diff.compare", "diff_runs"),
    "render_json": ("harness.diff.json_output", "render_json"),
    "render_junit": ("harness.diff.junit", "render_junit"),
    "render_markdown": ("harness.diff.markdown", "render_markdown"),
    "status_line": ("harness.diff.markdown", "status_line"),
}

__all__ = [
    "diff_runs",
    "render_json",
    "render_junit",
    "render_markdown",
    "status_line",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = home
    return getattr(importlib.import_module(module), attribute)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
