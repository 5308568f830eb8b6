"""Iteration pages: a run's reports and findings collected into a `Writeup`
(`collect`), rendered to Markdown and self-contained HTML with plots (`write`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.pages.markdown_html import markdown_to_html
    from harness.pages.render import write
    from harness.pages.writeup import KernelPage, Writeup, collect, index_pages

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "KernelPage": ("harness.pages.writeup", "KernelPage"),
    "Writeup": ("harness.pages.writeup", "Writeup"),
    "collect": ("harness.pages.writeup", "collect"),
    "index_pages": ("harness.pages.writeup", "index_pages"),
    "markdown_to_html": ("harness.pages.markdown_html", "markdown_to_html"),
    "write": ("harness.pages.render", "write"),
}

__all__ = [
    "KernelPage",
    "Writeup",
    "collect",
    "index_pages",
    "markdown_to_html",
    "write",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = home
    return getattr(importlib.import_module(module), attribute)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
