"""Signals around the steps that must not be cut in half, and named points to stop at.

`deferred_signals` holds SIGINT, SIGTERM and SIGHUP back while a set of files is renamed into
place or a staging folder is removed, then delivers the first one held: a command stopped by
a signal publishes a whole set or none, and leaves no half-removed staging folder.

`terminate_as_interrupt` turns SIGTERM and SIGHUP into an exception, as Python does Ctrl-C,
so that every command's cleanup runs (the default would end Python cold).

`pause_at` stops a command at a named point when `$NCUH_PAUSE_AT` names it (it says so on
stderr, then reads one line from stdin), so that tests deliver a signal at a known step, with
no sleeps and no timing windows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

PAUSE_ENV = "NCUH_PAUSE_AT"
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back for the block; deliver the first one after it.

    Python handlers run in the main thread only, so elsewhere the block runs as it is.
    """
    received: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        received.append(signum)

    previous: dict[int, Any] = {}
    try:
        for sig in HELD:
            previous[sig] = signal.signal(sig, hold)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        if received:
            signal.raise_signal(received[0])  # now handled as it would have been


def pause_at(point: str) -> None:
    """Stop here when `$NCUH_PAUSE_AT` is `point`: a line on stderr, then one read from stdin."""
    if os.environ.get(PAUSE_ENV) != point:
        return
    sys.stderr.write(f"ncuh: paused at {point}\n")
    sys.stderr.flush()
    sys.stdin.buffer.readline()


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into `SystemExit(128 + N)` for the block, so cleanup runs."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave the handlers alone
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
