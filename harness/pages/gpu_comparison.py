"""The same kernels profiled on two (or more) GPU models, side by side, each figure as a share
of its own GPU's peak: what moved because the chip differs, and what the kernel does the same
on both.

Pages are paired by kernel name and size (a plain report has no size: the name alone). Each
pair shows the duration on every GPU, the SM and memory throughput, DRAM and L2 throughput
and the FP32 throughput as % of that GPU's peak, and the unit that binds on each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.pages.side_by_side import bound_unit
from harness.report import KernelReport


class _Page(Protocol):
    kernel_name: str
    size: str | None
    device: str | None
    profile: KernelReport | None
    label: str


@dataclass(frozen=True)
class GpuFigure:
    """One figure of one kernel on each GPU (in `GpuComparison.devices` order)."""

    label: str
    unit: str  # "us" or "% of peak"
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class GpuKernel:
    """One kernel on every GPU it was profiled on."""

    kernel: str
    size: str | None
    bound: tuple[str, ...]  # the binding unit on each GPU
    figures: tuple[GpuFigure, ...]


@dataclass(frozen=True)
class GpuComparison:
    devices: tuple[str, ...]
    kernels: tuple[GpuKernel, ...]


def _fp32_pct(profile: KernelReport) -> float | None:
    roof = profile.roofline
    if roof.achieved_flops is None or not roof.peak_flops:
        return None
    return 100.0 * roof.achieved_flops / roof.peak_flops


_FIGURES: tuple[tuple[str, str, Callable[[KernelReport], float | None]], ...] = (
    ("Duration (ncu)", "us", lambda p: p.speed_of_light.duration_ns / 1e3
     if p.speed_of_light.duration_ns is not None else None),
    ("SM throughput", "% of peak", lambda p: p.speed_of_light.compute_throughput_pct),
    ("Memory throughput", "% of peak", lambda p: p.speed_of_light.memory_throughput_pct),
    ("DRAM throughput", "% of peak", lambda p: p.speed_of_light.dram_throughput_pct),
    ("L2 throughput", "% of peak", lambda p: p.speed_of_light.l2_throughput_pct),
    ("FP32 throughput", "% of peak", _fp32_pct),
    ("Achieved occupancy", "%", lambda p: p.occupancy.achieved_pct),
)


def _bound_text(profile: KernelReport) -> str:
    unit = bound_unit(profile)
    if unit is None:
        return "n/a"
    value = unit[2](profile)
    name = unit[1].removesuffix(" throughput")
    return f"{name} {value:.1f}%" if value is not None else name


def compare_gpus(pages: Sequence[_Page]) -> GpuComparison | None:
    """The pages' kernels on each GPU model; None unless at least two GPU models profiled at
    least one kernel in common."""
    devices = tuple(dict.fromkeys(p.device for p in pages if p.device and p.profile))
    if len(devices) < 2:
        return None
    by_key: dict[tuple[str, str | None], dict[str, KernelReport]] = {}
    for page in pages:
        if page.device and page.profile is not None:
            by_key.setdefault((page.kernel_name, page.size), {}).setdefault(page.device,
                                                                            page.profile)
    kernels = []
    for (name, size), on in by_key.items():
        if len(on) < 2:
            continue
        profiles = [on.get(d) for d in devices]
        figures = tuple(GpuFigure(label, unit, tuple(read(p) if p else None for p in profiles))
                        for label, unit, read in _FIGURES)
        kernels.append(GpuKernel(name, size, tuple(_bound_text(p) if p else "n/a"
                                                   for p in profiles), figures))
    return GpuComparison(devices, tuple(kernels)) if kernels else None
