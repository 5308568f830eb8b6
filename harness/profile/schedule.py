"""Hand targets to slots: one ncu at a time on the default GPU, or one per GPU at once.

Scheduling only: what a target is and how it is profiled is the caller's (`run.py`). Several
slots take from one work queue, longest first where earlier times are known (`longest_first`),
or share the targets out before they start where every time is known (`plan_slots`). A slot may
reserve its next target while it runs one (`upcoming`, for a head start); a slot with nothing
left takes such a reservation where a fresh start still pays (`TakingRule`). The first fatal
error or an interrupt stops every slot and kills the children still running.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from harness.profile.gpus import Gpu
from harness.profile.processes import kill_running

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


def longest_first(estimates: Sequence[float | None]) -> list[int]:
    """The order to hand items out in on several slots: those without an estimate first (they
    may be long), then the longest first, ties in item order. Handing the longest out first
    keeps one slow item from finishing alone at the end (LPT scheduling)."""
    unknown = [index for index, seconds in enumerate(estimates) if seconds is None]
    known = sorted((index for index, seconds in enumerate(estimates) if seconds is not None),
                   key=lambda index: -(estimates[index] or 0.0))
    return unknown + known


def plan_slots(work_s: Sequence[float | None], slots: int) -> list[list[int]] | None:
    """Which items each of `slots` slots runs, in order, from how long each item's work took
    before (without the start its first item pays, which every slot pays once alike); None
    with one slot or where any item's time is unknown (the shared queue then balances).

    The longest item goes to the least loaded slot (LPT), then single items are moved or
    swapped between the most loaded slot and another while that shortens the longest; each
    slot runs its items longest first, so what is left at the end is small. Taking the next
    item from one shared queue cannot do this once slots reserve their next item early
    (`harness.profile.head_start`): a slot then commits to an item long before it is free.
    """
    if slots < 2 or not work_s or any(seconds is None for seconds in work_s):
        return None
    work = [float(seconds or 0.0) for seconds in work_s]
    plan: list[list[int]] = [[] for _ in range(slots)]
    loads = [0.0] * slots
    for index in sorted(range(len(work)), key=lambda i: (-work[i], i)):
        least = min(range(slots), key=lambda n: (loads[n], len(plan[n]), n))
        plan[least].append(index)
        loads[least] += work[index]
    for _ in range(len(work) * slots):  # each step shortens the longest: few are needed
        if not _improve_once(plan, loads, work):
            break
    return [sorted(items, key=lambda i: (-work[i], i)) for items in plan]


def _improve_once(plan: list[list[int]], loads: list[float], work: list[float]) -> bool:
    """One move or swap out of the most loaded slot that leaves both slots below its load."""
    high = max(range(len(plan)), key=lambda n: (loads[n], -n))
    for low in sorted(range(len(plan)), key=lambda n: loads[n]):
        if low == high:
            continue
        for mine in plan[high]:
            for theirs in [None, *plan[low]]:
                moved = work[mine] - (work[theirs] if theirs is not None else 0.0)
                if moved <= 0 or loads[low] + moved >= loads[high] - 1e-9:
                    continue
                plan[high].remove(mine)
                plan[low].append(mine)
                if theirs is not None:
                    plan[low].remove(theirs)
                    plan[high].append(theirs)
                loads[high] -= moved
                loads[low] += moved
                return True
    return False


# What a slot's work may ask for: the item it will run next, reserved for it now (None when
# nothing is left), so that the work can start it early (`harness.profile.head_start`).
Upcoming = Callable[[], "tuple[int, T] | None"]
# How often a slot that chose to wait beside a busy one looks again.
_WAIT_POLL_S = 0.1


@dataclass(frozen=True)
class TakingRule:
    """When an idle slot takes the item another slot reserved (and started early for itself).

    Taking it runs it at once, beside the other slot's current item, but pays its start again
    (the early start on the other slot is stopped); leaving it, the other slot runs it as soon
    as its current item ends, its start already paid. So it is taken only while the other
    slot's current item has more than a fresh start left to run, or has run past its estimate
    by more than that (the estimate was wrong): `estimates[i]` is how long item i took before
    (None: unknown), `fresh_start_s()` what a fresh start costs (None: not known yet). Without
    either, the item is taken. `work_s[i]` is item i's time without a start of its own, what
    it costs a slot that has started it early (default: `estimates`); `queued_start_s` what
    each item waiting for a slot will pay to start there (0 where head starts hide it).
    """

    estimates: Sequence[float | None] = ()
    fresh_start_s: Callable[[], float | None] = field(default=lambda: None)
    work_s: Sequence[float | None] | None = None
    queued_start_s: float = 0.0

    def work(self, item: int) -> float | None:
        known = self.work_s if self.work_s is not None else self.estimates
        return known[item] if item < len(known) else None

    def worth_taking(self, owner_item: int | None, running_s: float) -> bool:
        if owner_item is None or owner_item >= len(self.estimates):
            return True
        estimate, fresh = self.estimates[owner_item], self.fresh_start_s()
        if estimate is None or fresh is None:
            return True
        left = estimate - running_s
        return left > fresh or -left > fresh


class _Wait:
    """`_Handout.take`'s answer when another slot's reservation is better left to it for now."""


WAIT = _Wait()


class _Handout(Generic[T]):
    """The items not yet handed out, in order (one list for all slots, or with a `plan` one
    per slot), the one each slot has reserved, and the one each slot runs (since when)."""

    def __init__(self, items: Sequence[T], order: Sequence[int],
                 rule: TakingRule | None = None,
                 plan: Sequence[Sequence[int]] | None = None) -> None:
        self._items = items
        self._left = list(reversed(order))  # popped from the end
        self._planned = [deque(part) for part in plan] if plan is not None else None
        self._reserved: dict[int, tuple[int, T]] = {}
        self._running: dict[int, tuple[int, float]] = {}
        self._rule = rule or TakingRule()
        self._lock = threading.Lock()

    def take(self, slot: int) -> tuple[int, T] | _Wait | None:
        """The next item for `slot`: the one it reserved, else the next one left (of its own
        planned ones, else another slot's last planned one where worth it), else one another
        slot reserved while it is still busy (rather than idle while it waits) where the rule
        says so; `WAIT` where it says to look again later, None when all is done."""
        with self._lock:
            self._running.pop(slot, None)
            if slot in self._reserved:
                item: tuple[int, T] | None = self._reserved.pop(slot)
            else:
                item = self._pop(slot)
            if item is None and self._planned is not None:
                item = self._take_planned(slot)
                if item is None and any(self._planned) and not self._reserved:
                    return WAIT  # left to their slots for now; one may still run late
            if item is None and self._reserved:
                now = time.monotonic()
                for owner in list(self._reserved):  # the oldest reservation first
                    index, since = self._running.get(owner, (None, now))
                    if self._rule.worth_taking(index, now - since):
                        item = self._reserved.pop(owner)
                        break
                else:
                    return WAIT
            if item is not None:
                self._running[slot] = (item[0], time.monotonic())
            return item

    def reserve(self, slot: int) -> tuple[int, T] | None:
        """The item `slot` will take next, set aside for it (asked again: the same one)."""
        with self._lock:
            if slot not in self._reserved:
                item = self._pop(slot)
                if item is None:
                    return None
                self._reserved[slot] = item
            return self._reserved[slot]

    def _pop(self, slot: int) -> tuple[int, T] | None:
        """The next item of the shared list, or of the slot's own planned one."""
        if self._planned is not None:
            own = self._planned[slot] if slot < len(self._planned) else None
            if not own:
                return None
            index = own.popleft()
        elif self._left:
            index = self._left.pop()
        else:
            return None
        return index, self._items[index]

    def _take_planned(self, slot: int) -> tuple[int, T] | None:
        """For a slot whose planned items are done: the last (shortest) item still planned for
        another slot, the one with the most work left first, where running it here at once
        (with a fresh start) ends before that slot would end it; None where none is worth it.
        """
        assert self._planned is not None
        rule, fresh = self._rule, self._rule.fresh_start_s()
        now = time.monotonic()

        def left_s(owner: int) -> float:
            index, since = self._running.get(owner, (None, now))
            estimate = rule.estimates[index] if index is not None and \
                index < len(rule.estimates) else None
            running = max(0.0, (estimate or 0.0) - (now - since))
            reserved = self._reserved.get(owner)
            queued = [*([reserved[0]] if reserved else []), *self._planned[owner]]
            return running + sum((rule.work(i) or 0.0) + rule.queued_start_s for i in queued)

        left = {owner: left_s(owner) for owner, part in enumerate(self._planned)
                if part and owner != slot}
        for owner in sorted(left, key=left.__getitem__, reverse=True):
            index = self._planned[owner][-1]
            work = rule.work(index)
            if fresh is None or work is None or left[owner] > fresh + work:
                self._planned[owner].pop()
                return index, self._items[index]
        return None


@dataclass
class _Shared(Generic[T, R]):
    handout: _Handout[T]
    results: dict[int, R]
    stop: threading.Event
    error: list[BaseException]


def run_queue(
    items: Sequence[T], slots: Sequence[Slot],
    work: Callable[[int, T, Slot, Upcoming[T]], R],
    order: Sequence[int] | None = None,
    rule: TakingRule | None = None,
    beside: Callable[[], bool] | None = None,
    plan: Sequence[Sequence[int]] | None = None,
) -> list[R]:
    """`work(index, item, slot, upcoming)` for every item, each slot doing one at a time;
    results in item order. Items are handed out in `order` (item indices; default: item
    order); with several slots, each takes the next one left when it is free. `upcoming()`
    reserves and returns the item the same slot runs next (or None); `rule` says when a free
    slot takes another's reservation. With several slots, `plan` (`plan_slots`) gives each
    slot its own items instead of the shared `order`. With several slots, `beside` is called
    on this thread while they run, every tenth of a second until it returns True (what must
    happen on the caller's thread; with one slot the work itself runs there). Raises the
    first exception any slot (or `beside`) raised, after stopping the others."""
    handed = list(order) if order is not None else list(range(len(items)))
    if sorted(handed) != list(range(len(items))):
        raise ValueError("order must name every item once")
    if plan is not None and (len(plan) != len(slots) or sorted(i for part in plan for i in part)
                             != list(range(len(items)))):
        raise ValueError("a plan must give each slot a list and name every item once")
    handout = _Handout(items, handed, rule, plan if len(slots) > 1 else None)
    if len(slots) <= 1:
        slot = slots[0] if slots else Slot()
        results: dict[int, R] = {}
        while (taken := handout.take(0)) is not None:
            assert not isinstance(taken, _Wait)  # one slot never waits for another
            index, item = taken
            results[index] = work(index, item, slot, lambda: handout.reserve(0))
        return [results[index] for index in range(len(items))]

    shared: _Shared[T, R] = _Shared(handout, {}, threading.Event(), [])
    threads = [threading.Thread(target=_slot_loop, args=(shared, number, slot, work),
                                daemon=True, name=f"ncuh-{slot.name or 'slot'}")
               for number, slot in enumerate(slots)]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            if shared.stop.is_set():
                # Again and again: a slot may have started its ncu just after the last sweep.
                kill_running()
            elif beside is not None and beside():
                beside = None
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


def _slot_loop(shared: _Shared[T, R], number: int, slot: Slot,
               work: Callable[[int, T, Slot, Upcoming[T]], R]) -> None:
    def upcoming() -> tuple[int, T] | None:
        return shared.handout.reserve(number)

    while not shared.stop.is_set():
        try:
            taken = shared.handout.take(number)
            if taken is None:
                return
            if isinstance(taken, _Wait):
                time.sleep(_WAIT_POLL_S)
                continue
            index, item = taken
            shared.results[index] = work(index, item, slot, upcoming)
        except BaseException as error:  # handed to the caller's thread
            if not shared.stop.is_set():
                shared.error.append(error)
            shared.stop.set()
            kill_running()
            return
