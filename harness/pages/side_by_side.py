"""Iterations side by side: the key counters of a kernel, and each one's change since the
previous iteration.

The counters are those a kernel author compares first: time, the throughput of the unit that
binds, occupancy, registers and shared memory per block, instructions, DRAM and L2 bytes, and
the top three stall reasons. Time, instructions, registers, shared memory and bytes are read
from the same metrics `ncuh diff` compares, so the two tell the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from harness.findings import busiest_memory_unit, busiest_pipes, classify_bound
from harness.report import KernelReport, stall_label

Reader = Callable[[KernelReport], "float | None"]
STALLS = 3
L2_SECTOR_BYTES = 32  # lts__t_sectors counts 32-byte sectors (as `ncuh diff` scales them)


@dataclass(frozen=True)
class KeyValue:
    """One key counter of one kernel."""

    key: str  # "time", "bound_unit", ..., "stall:long_scoreboard"
    label: str  # "Duration (ncu)", "DRAM throughput", ...
    unit: str  # "us", "% of peak", "B", ...
    value: float | None


@dataclass(frozen=True)
class Change:
    """One key counter before and after, with its change."""

    key: str
    label: str
    unit: str
    before: float | None
    after: float | None

    @property
    def change_pct(self) -> float | None:
        """Relative change in percent (as `ncuh diff` computes it); None without both sides."""
        if self.before is None or self.after is None:
            return None
        if self.before == 0:
            return 0.0 if self.after == 0 else math.copysign(math.inf, self.after)
        return 100.0 * (self.after - self.before) / abs(self.before)


def _metric(name: str, scale: float = 1.0) -> Reader:
    def read(profile: KernelReport) -> float | None:
        value = profile.metric(name)
        return value * scale if value is not None else None
    return read


def _shared_per_block(profile: KernelReport) -> float | None:
    static = profile.metric("launch__shared_mem_per_block_static")
    dynamic = profile.metric("launch__shared_mem_per_block_dynamic")
    if static is None and dynamic is None:
        return None
    return (static or 0.0) + (dynamic or 0.0)


def bound_unit(profile: KernelReport) -> tuple[str, str, Reader] | None:
    """The unit that binds the kernel, as (key, label, reader of its % of peak): the busiest
    memory unit of a memory-bound kernel, the busiest pipe of a compute-bound one, and the
    busier side of a latency-bound one."""
    kind = classify_bound(profile)
    if kind is None:
        return None
    sol = profile.speed_of_light
    unit = busiest_memory_unit(profile)
    memory_side = (sol.memory_throughput_pct or 0.0) >= (sol.compute_throughput_pct or 0.0)
    if kind == "memory" or (kind == "latency" and memory_side):
        if unit is None:
            return "memory", "memory throughput", lambda p: p.speed_of_light.memory_throughput_pct
        attr = {"L1/TEX": "l1_throughput_pct", "L2": "l2_throughput_pct",
                "DRAM": "dram_throughput_pct"}[unit[0]]
        return (f"unit:{unit[0]}", f"{unit[0]} throughput",
                lambda p: getattr(p.speed_of_light, attr))
    busiest = busiest_pipes(profile)
    if not busiest:
        return "compute", "SM throughput", lambda p: p.speed_of_light.compute_throughput_pct
    top = busiest[0]
    return f"pipe:{top.pipe}", f"{top.label} pipe", lambda p: p.pipe(top.pipe)


def _columns(profile: KernelReport) -> list[tuple[str, str, str, Reader]]:
    """The key counters of `profile`'s table: (key, label, unit, reader). The bound unit and
    the stalls are chosen by this profile, and read the same way from the one it is set
    beside."""
    columns: list[tuple[str, str, str, Reader]] = [
        ("time", "Duration (ncu)", "us", _metric("gpu__time_duration.sum", 1e-3))]
    unit = bound_unit(profile)
    if unit is not None:
        columns.append(("bound_unit", unit[1], "% of peak", unit[2]))
    columns += [
        ("occupancy", "Achieved occupancy", "%", lambda p: p.occupancy.achieved_pct),
        ("registers", "Registers per thread", "", _metric("launch__registers_per_thread")),
        ("shared_memory", "Shared memory per block", "B", _shared_per_block),
        ("instructions", "Instructions executed", "inst", _metric("smsp__inst_executed.sum")),
        ("dram_read_bytes", "DRAM bytes read", "B", _metric("dram__bytes_read.sum")),
        ("dram_write_bytes", "DRAM bytes written", "B", _metric("dram__bytes_write.sum")),
        ("l2_bytes", "L2 bytes", "B", _metric("lts__t_sectors.sum", L2_SECTOR_BYTES)),
    ]
    stalls = sorted((s for s in profile.warp_state.stalls if s.reason != "selected"),
                    key=lambda s: -s.cycles_per_issue)[:STALLS]
    for stall in stalls:
        reason = stall.reason
        columns.append((f"stall:{reason}", f"{stall_label(reason)} stall", "cycles/inst",
                        lambda p, r=reason: p.warp_state.stall(r)))
    return columns


def key_values(profile: KernelReport) -> list[KeyValue]:
    """The key counters of one kernel (its own bound unit and top stalls)."""
    return [KeyValue(key, label, unit, read(profile))
            for key, label, unit, read in _columns(profile)]


def since_previous(previous: KernelReport, current: KernelReport) -> list[Change]:
    """The key counters of `current` beside the same counters of `previous`."""
    return [Change(key, label, unit, read(previous), read(current))
            for key, label, unit, read in _columns(current)]
