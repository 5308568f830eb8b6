"""The `ncuh` executable and `python -m harness`: the command line, with start-up's garbage
collection put off.

Start-up makes many long-lived objects and next to no garbage, so the executable turns the
collector off while it starts; `harness.cli` turns it back on once the command's module is
loaded, after freezing what exists, with its young generation collected every 50,000
allocations (a command's report models live until it ends), and freezes what exists at exit
too. The library and the tests (which call `harness.cli.main`) keep their own settings.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from harness.cli import main as command_line

    try:
        command_line()
    finally:
        gc.freeze()
