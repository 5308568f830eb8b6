"""Hand targets to slots: one ncu at a time on the default GPU, or one per GPU at once.

Scheduling only: what a target is and how it is profiled is the caller's (`run.py`). With one
slot the targets run in order on this thread. With several, each slot is a thread that takes
the next target from one shared queue (a work queue, so a slow variant on one GPU does not hold
back the others) and runs it in a child pinned to its GPU; the queue holds the longest first
where the caller knows how long each took before (`longest_first`). The first fatal error
(no counter permission, no GPU) or an interrupt stops every slot: the children still running
are killed, the error is raised here, and the caller's atomic run directory is removed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from harness.profile.gpus import Gpu
from harness.profile.processes import kill_running

if TYPE_CHECKING:
    import queue

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Slot:
    """Where one ncu runs: a pinned GPU, or (gpu None) whatever device the child sees."""

    gpu: Gpu | None = None

    @property
    def name(self) -> str:
        return f"GPU {self.gpu.index}" if self.gpu is not None else ""


DEFAULT_SLOTS: tuple[Slot, ...] = (Slot(),)


@dataclass
class _Shared(Generic[T, R]):
    work: queue.Queue[tuple[int, T]]
    results: dict[int, R]
    stop: threading.Event
    error: list[BaseException]


def longest_first(estimates: Sequence[float | None]) -> list[int]:
    """The order to hand items out in on several slots: those without an estimate first (they
    may be long), then the longest first, ties in item order. Handing the longest out first
    keeps one slow item from finishing alone at the end (LPT scheduling)."""
    unknown = [index for index, seconds in enumerate(estimates) if seconds is None]
    known = sorted((index for index, seconds in enumerate(estimates) if seconds is not None),
                   key=lambda index: -(estimates[index] or 0.0))
    return unknown + known


def run_queue(
    items: Sequence[T], slots: Sequence[Slot], work: Callable[[int, T, Slot], R],
    order: Sequence[int] | None = None,
) -> list[R]:
    """`work(index, item, slot)` for every item, each slot doing one at a time; results in
    item order. With several slots, items are handed out in `order` (item indices; default:
    item order). Raises the first exception any slot raised, after stopping the others."""
    if len(slots) <= 1:
        slot = slots[0] if slots else Slot()
        return [work(index, item, slot) for index, item in enumerate(items)]
    import queue  # here: one slot (the usual run) needs no queue before its ncu starts

    shared: _Shared[T, R] = _Shared(queue.Queue(), {}, threading.Event(), [])
    handed = list(order) if order is not None else list(range(len(items)))
    if sorted(handed) != list(range(len(items))):
        raise ValueError("order must name every item once")
    for index in handed:
        shared.work.put((index, items[index]))
    threads = [threading.Thread(target=_slot_loop, args=(shared, slot, work), daemon=True,
                                name=f"ncuh-{slot.name or 'slot'}") for slot in slots]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            if shared.stop.is_set():
                # Again and again: a slot may have started its ncu just after the last sweep.
                kill_running()
            time.sleep(0.1)  # short waits: Ctrl-C reaches this thread
    except BaseException:
        shared.stop.set()
        while any(thread.is_alive() for thread in threads):
            kill_running()
            time.sleep(0.1)
        raise
    if shared.error:
        raise shared.error[0]
    return [shared.results[index] for index in range(len(items))]


def _slot_loop(shared: _Shared[T, R], slot: Slot, work: Callable[[int, T, Slot], R]) -> None:
    import queue

    while not shared.stop.is_set():
        try:
            index, item = shared.work.get_nowait()
        except queue.Empty:
            return
        try:
            shared.results[index] = work(index, item, slot)
        except BaseException as error:  # handed to the caller's thread
            if not shared.stop.is_set():
                shared.error.append(error)
            shared.stop.set()
            kill_running()
            return
