"""Rank a program's kernels by their total GPU time, from every launch of its first pass.

A kernel is its name and its launch shape (grid, block): the same function launched with
another grid is another kernel, as it is another workload; its mangled name tells it apart
where one is known (two instantiations a demangler prints alike stay two). Each process that
launched kernels (one per rank of a `torchrun`) gets a ranking of its own. Each kernel keeps
every launch's duration, its share of its process's GPU time and the cumulative share down the
ranking, and its representative launch: the one nearest the median duration, which the second
pass profiles in depth.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.profile.launches import Dim3, Launch
from harness.profile.nvtx_spans import Span
from harness.rundir import shape_text, short_name


@dataclass(frozen=True)
class Window:
    """Which of the first pass's launches are ranked: the user's --launch-skip and
    --launch-count, counted over every launch the filters let through, in ncu's order."""

    skip: int = 0
    count: int | None = None

    def take(self, launches: Sequence[Launch]) -> list[Launch]:
        end = None if self.count is None else self.skip + self.count
        return list(launches[self.skip:end])


@dataclass(frozen=True)
class RankedKernel:
    """One kernel (name and launch shape) of one process, with every launch's duration."""

    rank: int  # 1 is the kernel with the most GPU time
    name: str  # demangled, as ncu prints it
    mangled: str  # what the second pass's -k matches ("" where unknown: then `name`)
    grid: Dim3
    block: Dim3
    durations_ns: tuple[float, ...]  # in launch order
    share_pct: float  # of its process's GPU time
    cumulative_pct: float  # this kernel's share and every higher-ranked one's
    representative_id: int  # ncu's ID of the launch nearest the median duration
    # how many launches of the same (mangled) name came before it in the first pass (on its
    # device, where several processes ran): the second pass's --launch-skip
    representative_skip: int
    representative_ns: float

    @property
    def launches(self) -> int:
        return len(self.durations_ns)

    @property
    def total_ns(self) -> float:
        return sum(self.durations_ns)

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.launches

    @property
    def median_ns(self) -> float:
        return statistics.median(self.durations_ns)

    @property
    def stdev_ns(self) -> float:
        return statistics.stdev(self.durations_ns) if self.launches > 1 else 0.0

    def manifest(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "name": self.name, "mangled": self.mangled or None,
            "grid": list(self.grid),
            "block": list(self.block), "launches": self.launches,
            "total_ns": round(self.total_ns, 3), "share_pct": round(self.share_pct, 4),
            "cumulative_pct": round(self.cumulative_pct, 4),
            "mean_ns": round(self.mean_ns, 3), "median_ns": round(self.median_ns, 3),
            "stdev_ns": round(self.stdev_ns, 3), "min_ns": min(self.durations_ns),
            "max_ns": max(self.durations_ns),
            "representative": {"id": self.representative_id, "skip": self.representative_skip,
                               "duration_ns": self.representative_ns},
            "durations_ns": list(self.durations_ns),
        }


@dataclass(frozen=True)
class ProcessRanking:
    """The kernels one process launched, most GPU time first."""

    key: str  # "gpu0": the device it ran on ("gpu0-2": a second process on that device)
    process: int | None  # its process ID in the first pass
    device: int | None
    kernels: tuple[RankedKernel, ...]

    @property
    def launches(self) -> int:
        return sum(kernel.launches for kernel in self.kernels)

    @property
    def total_ns(self) -> float:
        return sum(kernel.total_ns for kernel in self.kernels)

    def manifest(self) -> dict[str, Any]:
        return {"key": self.key, "process": self.process, "device": self.device,
                "launches": self.launches, "total_ns": round(self.total_ns, 3),
                "kernels": [kernel.manifest() for kernel in self.kernels]}


@dataclass(frozen=True)
class Ranking:
    """Every process's ranking, first launch first."""

    processes: tuple[ProcessRanking, ...]
    window: Window
    launches_seen: int  # every launch of the first pass, ranked or not


def _process_keys(launches: Sequence[Launch]) -> dict[int | None, tuple[str, int | None]]:
    """Each process (by ID, in the order of its first launch) -> its key and device."""
    first: dict[int | None, int | None] = {}
    for launch in launches:
        first.setdefault(launch.process, launch.device)
    keys: dict[int | None, tuple[str, int | None]] = {}
    on_device: dict[int | None, int] = defaultdict(int)
    for index, (process, device) in enumerate(first.items()):
        on_device[device] += 1
        base = f"gpu{device}" if device is not None else f"process{index}"
        keys[process] = (base if on_device[device] == 1 else f"{base}-{on_device[device]}",
                         device)
    return keys


def _skips(launches: Sequence[Launch], by_device: bool) -> dict[int, int]:
    """Each launch's ID -> how many launches of its name came before it (on its device when
    `by_device`): what the second pass's `-k NAME --launch-skip` counts."""
    seen: dict[tuple[str, int | None], int] = defaultdict(int)
    skips = {}
    for launch in launches:
        group = (_identity(launch), launch.device if by_device else None)
        skips[launch.id] = seen[group]
        seen[group] += 1
    return skips


def _identity(launch: Launch) -> str:
    return launch.mangled or launch.name


def _representative(launches: Sequence[Launch]) -> Launch:
    """The launch nearest the median duration; the earliest of those as near."""
    median = statistics.median(launch.duration_ns for launch in launches)
    return min(launches, key=lambda launch: (abs(launch.duration_ns - median), launch.id))


def _rank_process(key: str, process: int | None, device: int | None,
                  launches: Sequence[Launch], skips: dict[int, int]) -> ProcessRanking:
    groups: dict[tuple[str, Dim3, Dim3], list[Launch]] = defaultdict(list)
    for launch in launches:
        groups[(_identity(launch), launch.grid, launch.block)].append(launch)
    total = sum(launch.duration_ns for launch in launches)
    # most time first; equal times in the order first launched
    ordered = sorted(groups.items(), key=lambda item: (
        -sum(launch.duration_ns for launch in item[1]), item[1][0].id))
    kernels, cumulative = [], 0.0
    for rank, ((_, grid, block), group) in enumerate(ordered, start=1):
        time = sum(launch.duration_ns for launch in group)
        share = 100.0 * time / total if total else 0.0
        cumulative += share
        chosen = _representative(group)
        kernels.append(RankedKernel(
            rank=rank, name=group[0].name, mangled=group[0].mangled, grid=grid, block=block,
            durations_ns=tuple(launch.duration_ns for launch in group), share_pct=share,
            cumulative_pct=min(cumulative, 100.0), representative_id=chosen.id,
            representative_skip=skips[chosen.id], representative_ns=chosen.duration_ns))
    return ProcessRanking(key, process, device, tuple(kernels))


def _spanned(launches: Sequence[Launch], spans: Sequence[Span]) -> list[Launch]:
    """Per process, its launches from the first one inside a span to the last, on any of its
    threads; every launch where no span is given."""
    if not spans:
        return list(launches)
    inside: dict[int | None, list[int]] = defaultdict(list)
    for launch in launches:
        if any(span.holds(launch.ranges) for span in spans):
            inside[launch.process].append(launch.id)
    return [launch for launch in launches if launch.process in inside
            and min(inside[launch.process]) <= launch.id <= max(inside[launch.process])]


def rank_launches(launches: Sequence[Launch], window: Window = Window(),
                  spans: Sequence[Span] = ()) -> Ranking:
    """The ranking of every process's launches within `spans` (`nvtx_spans`), then within
    `window` (in ncu's ID order)."""
    ordered = sorted(launches, key=lambda launch: launch.id)
    keys = _process_keys(ordered)
    skips = _skips(ordered, by_device=len(keys) > 1)
    ranked = window.take(_spanned(ordered, spans))
    processes = []
    for process, (key, device) in keys.items():
        own = [launch for launch in ranked if launch.process == process]
        if own:
            processes.append(_rank_process(key, process, device, own, skips))
    return Ranking(tuple(processes), window, len(ordered))


# --- the table `ncuh profile --top` prints ----------------------------------------------------

NAME_WIDTH = 56


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f}"


def _us(ns: float) -> str:
    return f"{ns / 1e3:,.1f}"


def ranking_table(process: ProcessRanking, top: int) -> list[str]:
    """The ranking of one process as text: the `top` kernels, then one line for the rest."""
    head = (f"{'#':>3}  {'kernel':<{NAME_WIDTH}}  {'grid':>14}  {'block':>11}  "
            f"{'launches':>8}  {'total ms':>10}  {'share':>6}  {'cum.':>6}  "
            f"{'mean us':>9}  {'sd us':>8}")
    lines = [head]
    for kernel in process.kernels[:top]:
        lines.append(
            f"{kernel.rank:>3}  {short_name(kernel.name, NAME_WIDTH):<{NAME_WIDTH}}  "
            f"{shape_text(kernel.grid):>14}  {shape_text(kernel.block):>11}  "
            f"{kernel.launches:>8}  {_ms(kernel.total_ns):>10}  {kernel.share_pct:>5.1f}%  "
            f"{kernel.cumulative_pct:>5.1f}%  {_us(kernel.mean_ns):>9}  "
            f"{_us(kernel.stdev_ns):>8}")
    rest = process.kernels[top:]
    if rest:
        time = sum(kernel.total_ns for kernel in rest)
        share = 100.0 * time / process.total_ns if process.total_ns else 0.0
        label = f"{len(rest)} more kernel" + ("" if len(rest) == 1 else "s")
        lines.append(f"{'':>3}  {label:<{NAME_WIDTH}}  {'':>14}  {'':>11}  "
                     f"{sum(k.launches for k in rest):>8}  {_ms(time):>10}  {share:>5.1f}%")
    lines.append(f"GPU time {_ms(process.total_ns)} ms over {process.launches} launches of "
                 f"{len(process.kernels)} kernels")
    return lines
