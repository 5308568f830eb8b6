"""One module per `ncuh` subcommand; each parses options, calls the library, prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

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

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
