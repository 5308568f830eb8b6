"""Items made at once by this process and forked children, each taking the next as it is free.

`made_at_once(count, make, jobs)` makes items 0..count-1 (`make(index) -> bytes`) in this
process and `jobs - 1` forked children; a child's item comes back as a view of the file it
wrote (a memoryview: bytes-like, not copied). The indices wait in a pipe (4 bytes a write, which a
pipe never splits); each process takes the next one when it is free, so a few large items do
not leave one process with most of the work. A child writes what it made to a file of its own
and exits. An item a child did not deliver (it failed, or was killed) is made here, where its
failure is raised as it is.

The children are forked: the caller must hold no thread (`may_fork_now`), and `make` must be
safe to run in a copy of this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

_INDEX = struct.Struct("<I")
_ITEM = struct.Struct("<IQ")  # index, length


def may_fork_now() -> bool:
    """Whether a child forked here is a safe copy: no other thread may hold a lock it needs."""
    return hasattr(os, "fork") and threading.active_count() == 1


def made_at_once(count: int, make: Callable[[int], bytes], jobs: int) -> list[bytes]:
    """What `make` made of each index, in order; see the module's docstring."""
    if jobs <= 1 or count <= 1 or not may_fork_now():
        return [make(index) for index in range(count)]
    taken, offered = os.pipe()
    made: dict[int, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="ncuh-work-") as scratch:
        children = []
        try:
            for number in range(1, min(jobs, count)):
                children.append(_fork_taker(taken, offered, make, Path(scratch) / f"{number}"))
            for index in range(count):
                os.write(offered, _INDEX.pack(index))
            os.close(offered)
            offered = -1
            made.update((index, make(index)) for index in _taken(taken))
            for number, pid in enumerate(children, start=1):
                _, status = os.waitpid(pid, 0)
                children[number - 1] = 0  # reaped
                if os.waitstatus_to_exitcode(status) == 0:
                    made.update(_delivered(Path(scratch) / f"{number}"))
        finally:
            _end(children)
            for handle in (taken, offered):
                if handle >= 0:
                    os.close(handle)
    return [made[index] if index in made else make(index) for index in range(count)]


def _taken(taken: int) -> Iterator[int]:
    """The indices this process takes from the pipe, one at a time, until it is empty."""
    while raw := os.read(taken, _INDEX.size):
        yield _INDEX.unpack(raw)[0]


def _fork_taker(taken: int, offered: int, make: Callable[[int], bytes], out: Path) -> int:
    """A child that makes the items it takes and writes them to `out`; its pid."""
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        # Ctrl-C reaches the whole process group: it is the parent's to handle; SIGTERM and
        # SIGHUP end the child at once rather than run the parent's handlers.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.close(offered)  # else the pipe never ends for this child
        with out.open("wb") as stream:
            for index in _taken(taken):
                item = make(index)
                stream.write(_ITEM.pack(index, len(item)))
                stream.write(item)
        status = 0
    finally:
        os._exit(status)  # never return into the parent's stack (its cleanups are its own)


def _delivered(path: Path) -> Iterator[tuple[int, bytes]]:
    """The items a child wrote, with their indices (views of the file's bytes, not copies)."""
    data = memoryview(path.read_bytes())
    at = 0
    while at < len(data):
        index, size = _ITEM.unpack_from(data, at)
        at += _ITEM.size
        yield index, data[at:at + size]  # type: ignore[misc]
        at += size


def _end(children: list[int]) -> None:
    """Kill and reap the children still running (an interrupt, or a failure here)."""
    for pid in children:
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
