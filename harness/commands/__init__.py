"""One module per `ncuh` subcommand; each parses options, calls the library, prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.commands.options import PROJECT_HELP

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "PROJECT_HELP": ("harness.commands.options", "PROJECT_HELP"),
}

__all__ = [
    "PROJECT_HELP",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = home
    return getattr(importlib.import_module(module), attribute)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
