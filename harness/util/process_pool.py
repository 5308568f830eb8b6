"""Work shared with worker processes, through `concurrent.futures`.

`worker_pool` is a `ProcessPoolExecutor` whose workers all start with it: forked, they begin
with this process's imports and data, run a warm-up where one is given, and leave Ctrl-C to
this process (SIGTERM and SIGHUP end a worker at once). The workers are killed when the block
ends, well or by an exception. `parallel_map` maps a function over indices with such a pool.

A fork copies only the thread that forks: a lock another thread holds (ncu_report's
disassembler runs one once a report's SASS is listed) would stay held in the worker. So
beside other threads a pool forks nothing: the caller works alone or, where asked, the workers
are spawned. A command starts its pool before it reads a report. `usable_cores` is the one
count of cores that every caller sizes its work by; `$NCUH_JOBS` caps it (a CI runner that
runs other jobs beside ncuh, or the test suite, whose own workers keep every core busy).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from harness.errors import NcuhError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

T = TypeVar("T")
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
JOBS_ENV = "NCUH_JOBS"  # the most cores a command keeps busy at once


def usable_cores() -> int:
    """The cores this process may run on (a container's or `taskset`'s share, not the host's),
    at most `$NCUH_JOBS` where that is set; `NcuhError` for a value that is not a count."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0)) or 1
    else:
        cores = os.cpu_count() or 1
    jobs = os.environ.get(JOBS_ENV, "").strip()
    if not jobs:
        return cores
    if not jobs.isascii() or not jobs.isdigit() or int(jobs) < 1:
        raise NcuhError(f"{JOBS_ENV} must be a whole number of 1 or more, not {jobs!r}")
    return min(cores, int(jobs))


_EXITING_S = 1.0  # the most a pool's threads, joined, may take to be gone from the system


def _threads() -> set[int]:
    """The threads this process runs (native ids): all of them where the system lists them,
    else those Python started."""
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:  # no /proc
        return {thread.native_id or 0 for thread in threading.enumerate()}


def _worker_started(warm_up: Callable[..., None] | None, args: tuple[Any, ...]) -> None:
    """A worker's first step: its signals, then its warm-up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: ours to end
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    if warm_up is not None:
        warm_up(*args)


@contextlib.contextmanager
def worker_pool(workers: int, warm_up: Callable[..., None] | None = None,
                args: tuple[Any, ...] = (), *, spawn_beside_threads: bool = False
                ) -> Iterator[ProcessPoolExecutor | None]:
    """A pool of `workers` processes, each having run `warm_up(*args)`: forked (`warm_up` and
    `args` passed on by the fork, never pickled) where this process runs one thread; beside
    others, spawned with `spawn_beside_threads` (then `warm_up`, `args` and every task are
    pickled), else none. None also where the system has no fork or no process to spare: the
    caller then works in this process."""
    one_thread = len(_threads()) == 1
    if workers < 1 or not hasattr(os, "fork") or not (one_thread or spawn_beside_threads):
        yield None
        return
    # imported here: counting cores, or working alone, needs neither
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork" if one_thread else "spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_started,
                               initargs=(warm_up, args))
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # a worker starts with them held
    try:
        pool.submit(int)  # the first task starts the workers (with a fork context, all of them)
        started = True
    except OSError:  # no more processes
        started = False
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    try:
        yield pool if started else None
    finally:
        _end(pool)


def _end(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers and wait for them, and for the pool's own threads, to be
    gone (the next pool of this process is then not refused for them)."""
    # ProcessPoolExecutor kills its workers itself from Python 3.14 (kill_workers); before,
    # its processes are reached through the attribute that holds them.
    kill = getattr(pool, "kill_workers", None)
    if kill is not None:
        kill()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            with contextlib.suppress(OSError, ValueError):
                process.kill()
    threads = [thread for thread in threading.enumerate()
               if thread is not threading.current_thread()]
    pool.shutdown(wait=True, cancel_futures=True)
    # joined, the pool's threads may still be exiting: the system lists them a moment longer
    ended = {thread.native_id for thread in threads if not thread.is_alive()}
    deadline = time.monotonic() + _EXITING_S
    while ended & _threads() and time.monotonic() < deadline:
        time.sleep(0.001)


_make: Callable[[int], Any] | None = None  # in a worker of `parallel_map`: what it maps


def _set_make(make: Callable[[int], Any]) -> None:
    global _make
    _make = make


def _made(index: int) -> Any:
    assert _make is not None
    return _make(index)


def parallel_map(make: Callable[[int], T], count: int, jobs: int) -> list[T]:
    """`[make(0), ..., make(count - 1)]`, made by this process and up to `jobs - 1` forked
    workers (where `jobs` and `count` are over one): the workers take the indices from the
    first on, each the next as it is free; this process makes the last, then each one no
    worker has started yet, from the end back. `make` is passed on by the fork (it may hold
    what cannot be pickled); what a worker makes comes back pickled. An index whose worker
    died is made here; a `make` that raised raises here, the first failing index first."""
    if jobs <= 1 or count <= 1:
        return [make(index) for index in range(count)]
    from concurrent.futures.process import BrokenProcessPool

    with worker_pool(min(jobs, count) - 1, _set_make, (make,)) as pool:
        if pool is None:
            return [make(index) for index in range(count)]
        futures = []
        for index in range(count - 1):
            try:
                futures.append(pool.submit(_made, index))
            except BrokenProcessPool:  # a worker died already: the rest is made here
                break
        here: dict[int, tuple[Any, Exception | None]] = {}
        for index in reversed(range(count)):
            if index < len(futures) and not futures[index].cancel():
                break  # a worker has it, and every index before it
            try:
                here[index] = (make(index), None)
            except Exception as error:  # raised in index order below, as a worker's would be
                here[index] = (None, error)
        made: list[T] = []
        for index in range(count):
            if index in here:
                value, error = here[index]
                if error is not None:
                    raise error
                made.append(value)
                continue
            try:
                made.append(futures[index].result())
            except BrokenProcessPool:  # its worker died (killed, out of memory)
                made.append(make(index))
        return made
