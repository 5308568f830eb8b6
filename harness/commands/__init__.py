"""One module per `ncuh` subcommand; each parses options, calls the library, prints.
"""

from __future__ import annotations

from harness.commands.options import PROJECT_HELP

__all__ = [
    "PROJECT_HELP",
]
