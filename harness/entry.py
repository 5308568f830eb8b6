"""The `ncuh` executable and `python -m harness`: the command line, with start-up's garbage
collection put off.

Start-up (click, the command's module, pydantic's schemas) makes some 50,000 objects that
live until exit and next to no garbage, yet Python's collector walks them over and over while
they are made, and once more at exit: about 15 ms of `ncuh profile` before ncu starts, and
35 ms after it, on a 2-core machine. So the executable turns the collector off for start-up;
`harness.cli` turns it back on once the command's module is loaded, after freezing what
exists (later collections skip it), and what exists at exit is frozen too, so that the exit
does not collect it either. The library and the tests (which call `harness.cli.main`) keep
Python's defaults.
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
