"""Draw a writeup's plots beside its reading.

Importing matplotlib and drawing the index's six charts would otherwise take one core after
the reading, while the others wait. `PlotDrawer.start` forks a process before any report is
opened; it imports matplotlib and draws a first small figure at once, while the command reads
its reports. Once the pages' data is known, the command hands it the charts that are not kept
(`submit`) and renders its pages; the drawer draws them with a forked child per further core
(`harness.util.made_at_once`), which inherit the warm matplotlib, and sends the plots back
(`results`). `stop` kills it and its children (a process group of their own) and removes
the folder they wrote into, which this process made.

It is forked before a report is opened: ncu_report's disassembler starts a thread, after which
a fork can hang; Agg starts none. The pipes carry the command's own data, never a file's.
Whatever goes wrong in the drawer, the command draws the plot itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import struct
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from harness.pages.plots import CHARTS, ChartCall, Plot
from harness.util import forked, made_at_once, usable_cores

_LENGTH = struct.Struct("<Q")


class PlotDrawer:
    """A forked process that draws charts on request; see the module's docstring."""

    def __init__(self, pid: int, requests: int, answers: int, scratch: Path) -> None:
        self._pid = pid
        self._requests = requests  # write end: the charts to draw
        self._answers = answers  # read end: the plots drawn
        self._scratch = scratch  # where the drawer's children write: this process removes it

    @classmethod
    def start(cls) -> PlotDrawer | None:
        """A drawer, where a second core would draw; None where this process should draw
        (one core, no fork, or a report already opened here)."""
        from harness.report import may_fork

        jobs = usable_cores()
        if jobs < 2 or not hasattr(os, "fork") or not may_fork():
            return None
        opened: list[int] = []
        scratch = None
        try:
            # made here, so that this process removes it whatever becomes of the drawer
            scratch = Path(tempfile.mkdtemp(prefix="ncuh-plots-"))
            request_read, requests = os.pipe()
            opened += [request_read, requests]
            answers, answer_write = os.pipe()
            opened += [answers, answer_write]
            pid = forked(_server(request_read, requests, answers, answer_write, jobs, scratch))
        except OSError:
            for handle in opened:
                os.close(handle)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            return None
        # a process group of its own (set on both sides of the fork, whichever runs first):
        # `stop` then ends the drawer and the children it draws with, together
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        os.close(request_read)
        os.close(answer_write)
        return cls(pid, requests, answers, scratch)

    def submit(self, calls: Sequence[ChartCall]) -> bool:
        """Hand the drawer `calls`; False where it could not take them."""
        try:
            _send(self._requests, pickle.dumps(list(calls), protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError):
            return False
        return True

    def results(self) -> list[Plot | None]:
        """The plots of the calls submitted, in order; None for each it could not draw."""
        try:
            plots = pickle.loads(_received(self._answers))
        except (OSError, EOFError, pickle.UnpicklingError, ValueError):
            plots = None
        self.stop()
        if not isinstance(plots, list):
            return []
        return [Plot(*plot) if _is_plot(plot) else None for plot in plots]

    def stop(self) -> None:
        """End the drawer and the children it draws with, drawing or not (SIGKILL to its
        process group), reap it, remove their scratch folder and close its pipes."""
        if self._pid:
            _signal_group(self._pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self._pid, 0)
            _group_gone(self._pid)
            self._pid = 0
        shutil.rmtree(self._scratch, ignore_errors=True)
        for handle in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                os.close(handle)
        self._requests = self._answers = -1


@contextlib.contextmanager
def started_drawer() -> Iterator[PlotDrawer | None]:
    """A drawer for the block (or None), ended with it."""
    drawer = PlotDrawer.start()
    try:
        yield drawer
    finally:
        if drawer is not None:
            drawer.stop()


_GROUP_WAIT_S = 1.0  # how long the drawer's killed children may take to be gone


def _signal_group(pid: int, signum: int) -> None:
    """`signum` to the drawer's process group, or to the drawer where it has none yet."""
    try:
        os.killpg(pid, signum)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def _group_gone(group: int) -> None:
    """Wait, briefly, until no process of `group` is left: a killed child ends its last
    write before the scratch folder is removed."""
    deadline = time.monotonic() + _GROUP_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except OSError:  # no process left in the group
            return
        time.sleep(0.002)


def _is_plot(drawn: object) -> bool:
    return (isinstance(drawn, tuple) and len(drawn) == 3 and isinstance(drawn[0], str)
            and isinstance(drawn[1], str) and isinstance(drawn[2], bytes))


def _send(handle: int, data: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(handle, view):]


def _received(handle: int) -> bytes:
    """One message of `_send`'s; EOFError where the pipe ends first."""
    (size,) = _LENGTH.unpack(_read_exactly(handle, _LENGTH.size))
    return _read_exactly(handle, size)


def _read_exactly(handle: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(handle, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the pipe ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _server(request_read: int, requests: int, answers: int, answer_write: int, jobs: int,
            scratch: Path) -> Callable[[], None]:
    """The drawer's work (`forked`): warm up, wait for the charts, draw them with `jobs`
    processes writing into `scratch`, answer."""

    def serve() -> None:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        os.close(requests)  # else the requests never end when the command is gone
        os.close(answers)
        from harness.pages.plots import warm_up

        warm_up()
        try:
            calls = pickle.loads(_received(request_read))
        except EOFError:  # the command ended, or needed no plot
            return
        drawn = _drawn(calls, jobs, scratch)
        _send(answer_write, pickle.dumps(drawn, protocol=pickle.HIGHEST_PROTOCOL))

    return serve


# drawn first, as they take longest: the others then fill in around them
_SLOWEST = ("roofline_chart", "instruction_mix_chart", "stall_chart")


def _drawn(calls: list[ChartCall], jobs: int,
           scratch: Path) -> list[tuple[str, str, bytes]]:
    """Each call's (name, caption, PNG), drawn here and in forked children at once."""
    order = sorted(range(len(calls)), key=lambda index: (
        _SLOWEST.index(calls[index].chart) if calls[index].chart in _SLOWEST else len(_SLOWEST),
        index))

    def draw(position: int) -> bytes:
        call = calls[order[position]]
        plot = CHARTS[call.chart](*call.args, **call.options)
        return pickle.dumps((plot.name, plot.title, plot.png))

    drawn = made_at_once(len(calls), draw, jobs, scratch)
    results: list[tuple[str, str, bytes]] = [("", "", b"")] * len(calls)
    for position, item in enumerate(drawn):
        results[order[position]] = pickle.loads(item)
    return results
