"""How far a run is: ncu's own pass progress, and one live line (or plain lines) on stderr.

ncu prints, per profiled kernel, `==PROF== Profiling "name" - 0: 0%....50%....100% - 38 passes`,
a dot for every 10% of its replay passes as they finish. `PassProgress` reads that text as it
arrives; `ProgressDisplay` turns it into `[3/11] register_tiled_4096 GPU 0 · 40% of passes ·
1:12 elapsed · ETA 3:05` rewritten in place on a terminal, and into plain start/done lines when
stderr is not one (CI logs), where a line rewritten every second would be noise.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

_PROFILING = "==PROF== Profiling"
_STEP = re.compile(r"(\d+)%|(\.)")
_PASSES = re.compile(r"-\s*(\d+)\s+passes?\b")
# a line that goes on with ncu's dots: dots and "NN%" steps only, perhaps with the pass count
_CONTINUATION = re.compile(r"^(?:\.+|\d+%)+(?:\s*-\s*\d+\s+passes?\b.*)?$")


@dataclass
class PassProgress:
    """ncu's replay progress for one target, fed with its output as it comes."""

    percent: float | None = None  # of the kernel being profiled now; None before it starts
    passes: int | None = None  # ncu's pass count once it has printed it
    started: float | None = None  # monotonic time the first pass began
    _tail: str = ""

    def feed(self, text: str, now: float | None = None) -> None:
        self._tail = (self._tail + text)[-4096:]
        start = self._tail.rfind(_PROFILING)
        if start < 0:
            return
        self._read(_progress_line(self._tail[start:]), now)

    def _read(self, line: str, now: float | None) -> None:
        # The progress starts after the kernel's name: `"name" - 0: `
        progress = line.split(": ", 1)[1] if ": " in line else ""
        if self.started is None:
            self.started = now if now is not None else time.monotonic()
        percent: float | None = None
        for match in _STEP.finditer(progress.split(" - ", 1)[0]):
            percent = float(match.group(1)) if match.group(1) else (percent or 0.0) + 10.0
        if percent is not None:
            self.percent = min(percent, 100.0)
        passes = _PASSES.search(line)
        if passes:
            self.passes = int(passes.group(1))
            self.percent = 100.0

    def remaining(self, now: float) -> float | None:
        """Seconds left for this kernel's passes, from the rate so far; None before 10%."""
        if self.started is None or not self.percent or self.percent >= 100.0:
            return None if self.percent != 100.0 else 0.0
        spent = now - self.started
        return spent * (100.0 - self.percent) / self.percent


def _progress_line(text: str) -> str:
    """The progress line that starts `text` (at `==PROF== Profiling`), whole: ncu may print a
    warning between its dots (`==WARNING== Launching the workload is taking more time than
    expected`, for a slow kernel), and the dots go on on the next line."""
    first, *rest = text.split("\n")
    for line in rest:
        if _PASSES.search(first):  # the count ends the progress: what follows is the program's
            break
        if line.startswith("=="):
            continue
        if not _CONTINUATION.match(line):
            break
        first += line
    return first


def passes_in(output: str) -> int | None:
    """ncu's pass count for the (last) kernel it profiled, from its whole output."""
    start = output.rfind(_PROFILING)
    if start < 0:
        return None
    progress = PassProgress()
    progress._read(_progress_line(output[start:]), None)
    return progress.passes


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass
class _Active:
    index: int
    label: str
    where: str
    started: float
    progress: PassProgress = field(default_factory=PassProgress)


class ProgressDisplay:
    """The live line (terminal) or plain lines (anything else) for one `ncuh profile` run.

    Thread-safe: targets on several GPUs report at once. `live=None` asks the stream whether it
    is a terminal.
    """

    def __init__(self, stream: IO[str] | None = None, *, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, interval: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.clock = clock
        self.interval = interval
        self.began = clock()
        self.total = 0
        self.done = 0
        self.done_seconds: list[float] = []
        self.slots = 1
        self._active: dict[str, _Active] = {}
        self._lock = threading.Lock()
        self._last_draw = 0.0
        self._width = 0

    # -- events from the scheduler
    def start(self, label: str, index: int, total: int, where: str | None = None,
              slots: int = 1) -> None:
        with self._lock:
            self.total, self.slots = total, max(1, slots)
            self._active[label] = _Active(index, label, where or "", self.clock())
            if self.live:
                self._draw(force=True)
            else:
                self._print(f"[{index + 1}/{total}] {label}{self._on(where)}: profiling")

    def output(self, label: str, text: str) -> None:
        with self._lock:
            active = self._active.get(label)
            if active is None:
                return
            active.progress.feed(text, self.clock())
            if self.live:
                self._draw()

    def finish(self, label: str, status: str, seconds: float, passes: int | None = None,
               error: str | None = None) -> None:
        with self._lock:
            active = self._active.pop(label, None)
            self.done += 1
            self.done_seconds.append(seconds)
            where = self._on(active.where) if active else ""
            index = active.index + 1 if active else self.done
            detail = f"{status} {seconds:.1f} s" + (f", {passes} passes" if passes else "")
            line = f"[{index}/{self.total}] {label}{where}: {detail}"
            line += f" ({error})" if error else ""
            if self.live:
                self._clear()
                self._print(line)
                self._draw(force=True)
            else:
                self._print(line)

    def count_anew(self) -> None:
        """Count the targets that follow from none done (after `--top`'s first pass); the
        seconds seen so far still inform the ETA."""
        with self._lock:
            self.done = 0

    def close(self) -> None:
        with self._lock:
            if self.live:
                self._clear()

    # -- the line
    def eta(self, now: float) -> float | None:
        """Seconds until the last target is done: the running ones' pass rates, then the
        mean time of a finished target for each one not started, shared among the slots."""
        running = [a.progress.remaining(now) for a in self._active.values()]
        known = [r for r in running if r is not None]
        waiting = self.total - self.done - len(self._active)
        if not self.done_seconds and (waiting > 0 or not known):
            return None
        mean = sum(self.done_seconds) / len(self.done_seconds) if self.done_seconds else 0.0
        return max(known, default=0.0) + mean * waiting / self.slots

    def line(self) -> str:
        now = self.clock()
        parts = []
        for active in sorted(self._active.values(), key=lambda a: a.index):
            percent = active.progress.percent
            state = f"{percent:.0f}% of passes" if percent is not None else "starting"
            parts.append(f"[{active.index + 1}/{self.total}] {active.label}"
                         f"{self._on(active.where)} {state}")
        eta = self.eta(now)
        tail = f"{_clock(now - self.began)} elapsed" + (f", ETA {_clock(eta)}" if eta else "")
        return " | ".join([*parts, tail])

    def _draw(self, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        text = self.line()
        self.stream.write("\r" + text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def _clear(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
            self.stream.flush()

    def _print(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    @staticmethod
    def _on(where: Any) -> str:
        return f" on {where}" if where else ""
