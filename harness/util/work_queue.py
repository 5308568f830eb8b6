"""Items made at once by this process and forked children, each taking the next as it is free.

`made_at_once(count, make, jobs)` makes items 0..count-1 (`make(index) -> bytes`) in this
process and up to `jobs - 1` forked children. The indices wait in a pipe (4 bytes a write,
which a pipe never splits); each process takes the next one when it is free, so a few large
items do not leave one process with most of the work. A child writes each item it made to a
file of its own as it goes, and a child's item comes back as a view of that file (bytes-like,
not copied). An item nobody delivered (its maker failed, or was killed) is made here, in
order, where its failure is raised as it is: the first failing index, whoever met it first.

`forked(child)` forks a child that runs `child` and ends, which any code here forks through.
The caller must hold no thread (`may_fork_now`), and `make` must be safe in a copy of it.
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

Item = bytes | memoryview  # what `make` returns, or a view of what a child wrote

_INDEX = struct.Struct("<I")
_ITEM = struct.Struct("<IQ")  # index, length
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def usable_cores() -> int:
    """The cores this process may run on (a container's or `taskset`'s share, not the host's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def put_index(pipe: int, index: int) -> None:
    """Write one index to `pipe` in one write of 4 bytes, which a pipe never splits."""
    os.write(pipe, _INDEX.pack(index))


def taken_indices(pipe: int) -> Iterator[int]:
    """The indices this process takes from `pipe`, one at a time, until it ends."""
    while raw := os.read(pipe, _INDEX.size):
        yield _INDEX.unpack(raw)[0]


def may_fork_now() -> bool:
    """Whether this process runs one Python thread (a fork copies no other thread's work in
    progress). A native thread, such as ncu_report's disassembler's, is the caller's to rule
    out (`harness.report.reportfile.disassembler_started`)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def forked(child: Callable[[], None]) -> int:
    """Fork a child that runs `child` and then ends (status 0, or 1 if it raised); its pid.

    Signals are held across the fork, so none lands in the child before it has let Ctrl-C
    go to the parent (which ends it) and SIGTERM and SIGHUP end it at once: a child never
    unwinds into the parent's code. OSError where the fork fails."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return pid
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        child()
        status = 0
    finally:
        os._exit(status)  # never return into the parent's stack (its cleanups are its own)


def made_at_once(count: int, make: Callable[[int], Item], jobs: int,
                 scratch: Path | None = None) -> list[Item]:
    """What `make` made of each index, in order; see the module's docstring. The children
    write into `scratch` where it is given (its owner removes it), else into a temporary
    folder of this call's."""
    if jobs <= 1 or count <= 1 or not may_fork_now():
        return [make(index) for index in range(count)]
    if scratch is not None:
        return _made_with_children(count, make, jobs, scratch)
    with tempfile.TemporaryDirectory(prefix="ncuh-work-") as folder:
        return _made_with_children(count, make, jobs, Path(folder))


def _made_with_children(count: int, make: Callable[[int], Item], jobs: int,
                        scratch: Path) -> list[Item]:
    taken, offered = os.pipe()
    made: dict[int, Item] = {}
    children: list[int] = []
    try:
        for number in range(1, min(jobs, count)):
            try:
                children.append(forked(_taker(taken, offered, make, scratch / f"{number}")))
            except OSError:  # no more processes: fewer hands
                break
        try:
            failed = _offer_and_take(taken, offered, count, make, made)
        finally:
            os.close(offered)
            offered = -1
        if not failed:
            for index in taken_indices(taken):
                if not _make_here(make, index, made):
                    break
        for number, pid in enumerate(children, start=1):
            os.waitpid(pid, 0)
            children[number - 1] = 0  # reaped
            # whatever its status: the items it wrote whole are whole
            made.update(_delivered(scratch / f"{number}"))
    finally:
        _end(children)
        for handle in (taken, offered):
            if handle >= 0:
                os.close(handle)
    return [made[index] if index in made else make(index) for index in range(count)]


def _offer_and_take(taken: int, offered: int, count: int, make: Callable[[int], Item],
                    made: dict[int, Item]) -> bool:
    """Put every index in the pipe; while it is full, make one item here (so more items
    than a pipe holds never wait on children that may be gone). True when an item failed
    here: it is made again, in order, at the end."""
    os.set_blocking(offered, False)
    index = 0
    while index < count:
        try:
            put_index(offered, index)
            index += 1
        except BlockingIOError:  # full: a taken index makes room
            (next_index,) = _INDEX.unpack(os.read(taken, _INDEX.size))
            if not _make_here(make, next_index, made):
                return True
    return False


def _make_here(make: Callable[[int], Item], index: int, made: dict[int, Item]) -> bool:
    try:
        made[index] = make(index)
    except Exception:
        return False  # stop taking: the in-order pass raises the first failing index
    return True


def _taker(taken: int, offered: int, make: Callable[[int], Item],
           out: Path) -> Callable[[], None]:
    """A child's work: make the items it takes and write each to `out` as it is made."""

    def take() -> None:
        os.close(offered)  # else the pipe never ends for this child
        with out.open("wb") as stream:
            for index in taken_indices(taken):
                item = make(index)
                stream.write(_ITEM.pack(index, len(item)))
                stream.write(item)
                stream.flush()  # an item written whole stays whole if a later one fails

    return take


def _delivered(path: Path) -> Iterator[tuple[int, Item]]:
    """The items a child wrote whole, with their indices (views of the file, not copies)."""
    try:
        data = memoryview(path.read_bytes())
    except OSError:  # it never started
        return
    at = 0
    while at + _ITEM.size <= len(data):
        index, size = _ITEM.unpack_from(data, at)
        if at + _ITEM.size + size > len(data):
            return  # cut short: the child ended while writing it
        at += _ITEM.size
        yield index, data[at:at + size]
        at += size


def _end(children: list[int]) -> None:
    """Kill and reap the children still running (an interrupt, or a failure here)."""
    for pid in children:
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
