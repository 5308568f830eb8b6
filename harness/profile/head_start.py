"""Start the next variant's ncu while the current one is profiled: a head start.

With several targets on one slot (the default GPU, or one GPU of `--gpus`), the next target's
ncu starts as soon as the current one's is running, so that ncu's, Python's and CUDA's start
and the compile overlap the replay passes. Its runner waits at two gates (`harness.gpu.gates`):
CUDA starts once the current kernel's replay passes have begun, and the first allocation or
launch waits until every process of the current program has disconnected from its ncu (or that
ncu has exited), so nothing of it reaches the GPU while another kernel is measured. Only ncuh's
own runner gets a head start, and not with `application` replay. `NCUH_HEAD_START=off` turns it
off; an entry's `head_start_s` says how long its ncu ran before its turn.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from harness.gpu import GATES_OWNER_ENV, LAUNCH_AFTER_ENV, START_CUDA_AFTER_ENV
from harness.profile.processes import StreamingCommand
from harness.util import switched_off

HEAD_START_ENV = "NCUH_HEAD_START"
# ncu's replay modes in which the program runs once: its processes' disconnection is final.
HEAD_START_REPLAY_MODES = ("kernel", "range")
T = TypeVar("T")
_PROFILING = "==PROF== Profiling"
# ncu's own lines about the program's processes: "==PROF== Connected to process 4242 (...)".
_PROCESS_LINE = re.compile(r"==PROF== (Connected to|Disconnected from) process (\d+)")


def head_starts_on() -> bool:
    """Whether the environment leaves head starts on (the default)."""
    return not switched_off(HEAD_START_ENV)


@dataclass
class EarlyStart:
    """A target's ncu started before its turn, its runner waiting at the gates."""

    index: int
    command: StreamingCommand
    start_cuda: Path
    launch: Path
    started: float  # monotonic

    def open_start_cuda(self) -> None:
        self.start_cuda.touch()

    def open_all(self) -> None:
        self.start_cuda.touch()
        self.launch.touch()


class HeadStarts:
    """At most one early start per slot, and the gate files they wait for.

    With several slots (`--gpus`) an idle slot may take the target another slot has reserved
    for its next turn (`schedule`); that slot's early start of it is then killed here, so that
    a target never runs twice. Reserving and starting happen under the same lock as taking,
    so a target taken from another slot between the two is still found and killed.
    """

    def __init__(self) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="ncuh-gates-"))
        self._waiting: dict[Hashable, EarlyStart] = {}
        self._lock = threading.Lock()  # never held across another of these methods

    def start_next(self, slot: Hashable,
                   upcoming: Callable[[], tuple[int, T] | None],
                   command: Callable[[T], tuple[Sequence[str], dict[str, str] | None]]) -> None:
        """Reserve the target `slot` runs next (`upcoming`) and start its ncu now (`command`
        gives its argv and environment); it waits at the gates until `slot` lets it on."""
        with self._lock:
            following = upcoming()
            if following is None:
                return
            index, target = following
            argv, env = command(target)
            self._start(slot, index, argv, env)

    def _start(self, slot: Hashable, index: int, argv: Sequence[str],
               env: dict[str, str] | None) -> None:
        start_cuda = self._folder / f"{index}.start-cuda"
        launch = self._folder / f"{index}.launch"
        gated = {**(env if env is not None else os.environ),
                 START_CUDA_AFTER_ENV: str(start_cuda), LAUNCH_AFTER_ENV: str(launch),
                 GATES_OWNER_ENV: str(os.getpid())}
        replaced = self._waiting.get(slot)
        if replaced is not None:  # a slot starts its next target only once: never two waiting
            replaced.command.kill()
        self._waiting[slot] = EarlyStart(index, StreamingCommand(argv, gated), start_cuda,
                                         launch, time.monotonic())

    def take(self, slot: Hashable, index: int) -> EarlyStart | None:
        """The early start of target `index` on `slot`, now its turn (its gates opened); None
        if it has none. An early start of `index` on another slot (the target was taken from
        that slot's reservation) is killed: this slot runs it."""
        with self._lock:
            early = self._waiting.get(slot)
            if early is not None and early.index == index:
                del self._waiting[slot]
                early.open_all()
                return early
            elsewhere = [other for other, waiting in self._waiting.items()
                         if waiting.index == index]
            taken_from = [self._waiting.pop(other) for other in elsewhere]
        for stale in taken_from:
            stale.command.kill()
        return None

    def replay_began(self, slot: Hashable) -> None:
        """The current kernel of `slot` is being replayed: the early one may start CUDA."""
        with self._lock:
            early = self._waiting.get(slot)
        if early is not None:
            early.open_start_cuda()

    def program_gone(self, slot: Hashable) -> None:
        """The current program of `slot` has left the GPU (its ncu still writes the report):
        the early one may use the GPU."""
        with self._lock:
            early = self._waiting.get(slot)
        if early is not None:
            early.open_all()

    def kill_all(self) -> None:
        """Stop every early start (the run is failing or interrupted)."""
        with self._lock:
            waiting, self._waiting = list(self._waiting.values()), {}
        for early in waiting:
            early.command.kill()

    def close(self) -> None:
        self.kill_all()
        shutil.rmtree(self._folder, ignore_errors=True)


class FreshStartClock:
    """How long a target's ncu takes from its start to its first replay pass when nothing
    started it early (ncu, Python, the imports, CUDA, the compile, the check, the warm-up):
    what another slot pays to take a target this slot started early (`schedule.TakingRule`).
    The shortest seen in this run counts. It is seen on each slot's first target, the longest
    (they go first), with its own check and warm-up, and when its output is read: it runs
    long rather than short, so an idle slot errs towards leaving a target with the slot that
    started it."""

    def __init__(self) -> None:
        self._shortest: float | None = None
        self._lock = threading.Lock()

    def watch(self, also: Callable[[float], None] | None = None
              ) -> Callable[[str, float], None]:
        """A feeder for one fresh target's ncu output, each piece with the time it came
        (`time.monotonic()`), its clock started now; `also` is told that target's start in
        seconds (the manifest's `start_s`)."""
        started = time.monotonic()
        came = [started]  # when the piece being fed came

        def first_pass() -> None:
            seconds = came[0] - started
            with self._lock:
                if self._shortest is None or seconds < self._shortest:
                    self._shortest = seconds
            if also is not None:
                also(seconds)

        watch = NcuOutputWatch(first_pass, lambda: None)

        def feed(text: str, at: float) -> None:
            came[0] = at
            watch.feed(text)

        return feed

    def seconds(self) -> float | None:
        with self._lock:
            return self._shortest


class NcuOutputWatch:
    """Feeds on a target's ncu output; calls `on_replay` once, when its first replay pass
    begins, and `on_gone` once, when every process that connected has disconnected."""

    def __init__(self, on_replay: Callable[[], None], on_gone: Callable[[], None]) -> None:
        self._on_replay: Callable[[], None] | None = on_replay
        self._on_gone: Callable[[], None] | None = on_gone
        self._partial = ""  # the last line, until its end comes
        self._processes: set[str] = set()  # connected and not yet disconnected

    def feed(self, text: str) -> None:
        if self._on_gone is None:
            return
        *lines, self._partial = (self._partial + text).split("\n")
        # A replay's progress dots come without a line end: look at the partial line too.
        for line in [*lines, self._partial]:
            if self._on_replay is not None and line.lstrip().startswith(_PROFILING):
                callback, self._on_replay = self._on_replay, None
                callback()
        for line in lines:
            found = _PROCESS_LINE.match(line.lstrip())  # ncu's own lines start with ==PROF==
            if found is None:
                continue
            if found.group(1) == "Connected to":
                self._processes.add(found.group(2))
            elif found.group(2) in self._processes:
                self._processes.discard(found.group(2))
                if not self._processes:
                    callback, self._on_gone = self._on_gone, None
                    callback()
                    return
        self._partial = self._partial[-4096:]  # a program may print without line ends
