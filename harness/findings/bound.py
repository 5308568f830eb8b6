"""Which unit binds: memory-, compute- or latency-bound, as ncu's speed-of-light rule says.

ncu's SOLBottleneck rule: when compute (SM) and memory throughput are both below 60% of
peak the kernel is latency-bound; at or above 80% the busiest unit is saturated; between
the two, the higher of the two says where to look.
"""

from __future__ import annotations

from typing import Literal

from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "bound"
SECTION = "GPU Speed Of Light Throughput"
LATENCY_THRESHOLD = 60.0  # ncu: below this for both, "latency issues"
HIGH_THRESHOLD = 80.0  # ncu: "utilizing greater than 80.0% of ... the device"
READABLE = 100.0  # percent of peak: above it a throughput is no share of the peak
DESCRIBE_MIN = 20.0  # percent: a latency-bound kernel's busiest unit is named from here on
# percent of DRAM peak: a memory-bound kernel this close streams about as fast as DRAM allows
# (sustained reads and writes top out around 90% of the theoretical peak)
NEAR_PEAK = 85.0

Bound = Literal["memory", "compute", "latency"]


def classify_bound(profile: KernelReport) -> Bound | None:
    """The binding unit, or None when the speed-of-light throughputs were not collected.
    A tensor-core kernel's compute side is its tensor pipe where that is busier than the SM
    throughput figure (which averages over sub-units a WGMMA kernel leaves idle)."""
    from harness.findings.tensor_core import tensor_use  # it reads pipes, which reads bound

    sol = profile.speed_of_light
    compute, memory = sol.compute_throughput_pct, sol.memory_throughput_pct
    if compute is None or memory is None:
        return None
    if memory > READABLE:  # ncu's figure is no share of a peak: the units that can be read
        unit = busiest_memory_unit(profile)
        memory = unit[1] if unit is not None else 0.0
    use = tensor_use(profile)
    if use is not None:
        compute = max(compute, use.pipe_pct)
    if compute < LATENCY_THRESHOLD and memory < LATENCY_THRESHOLD:
        return "latency"
    return "memory" if memory >= compute else "compute"


def busiest_memory_unit(profile: KernelReport) -> tuple[str, float] | None:
    """The memory unit nearest its peak (L1/TEX, L2 or DRAM) and its throughput in percent."""
    sol = profile.speed_of_light
    units = {
        "L1/TEX": sol.l1_throughput_pct,
        "L2": sol.l2_throughput_pct,
        "DRAM": sol.dram_throughput_pct,
    }
    # a share of peak over 100% is no utilization (`odd_figures`): it names no busiest unit
    known = {name: value for name, value in units.items()
             if value is not None and value <= READABLE}
    if not known:
        return None
    name = max(known, key=lambda n: known[n])
    return name, known[name]


def near_dram_peak(profile: KernelReport) -> float | None:
    """DRAM throughput in percent of peak when a memory-bound kernel is near it, else None."""
    unit = busiest_memory_unit(profile)
    if classify_bound(profile) != "memory" or unit is None or unit[0] != "DRAM":
        return None
    return unit[1] if unit[1] >= NEAR_PEAK else None


def pipe_headroom_pct(profile: KernelReport) -> tuple[str, float, float] | None:
    """(pipe label, its % of peak, the most speedup left at the same instructions, in %) of
    a compute-bound kernel's busiest pipe; None for another bound or without pipes."""
    from harness.findings.pipes import busiest_pipes  # pipes reads bound's thresholds

    pipes = busiest_pipes(profile)
    if classify_bound(profile) != "compute" or not pipes or pipes[0].pct <= 0.0:
        return None
    busiest = pipes[0]
    return busiest.label, busiest.pct, 100.0 * (100.0 / min(busiest.pct, 100.0) - 1.0)


def describe_bound(profile: KernelReport) -> str:
    """The binding unit in a few words, e.g. "compute-bound (FP64 pipe at 86.7%)",
    "memory-bound (DRAM)", "latency-bound (busiest memory unit L2 at 47.2%)"."""
    from harness.findings.feeds import ASYNC_PATHS, async_share, main_paths
    from harness.findings.pipes import busiest_pipes, busy_with  # pipes reads bound's thresholds
    from harness.findings.tensor_core import near_peak, summary

    bound = classify_bound(profile)
    if bound is None:
        return "not collected"
    sol = profile.speed_of_light
    pipes = busiest_pipes(profile)
    unit = busiest_memory_unit(profile)
    if bound == "compute":
        if not pipes:
            return "compute-bound"
        tensor = pipes[0].pipe.startswith("tensor")
        work = summary(profile) if tensor else busy_with(profile, pipes[0].pipe)
        near = ", near its peak" if tensor and near_peak(profile) is not None else ""
        return (f"compute-bound ({pipes[0].label} pipe at {fmt(pipes[0].pct)}%{near}"
                + (f": {work})" if work else ")"))
    if bound == "memory":
        # the async-copy engines carry the loads: say so, a TMA pipeline is tuned differently
        share = async_share(profile)
        paths = [p for p in main_paths(profile) if p in ASYNC_PATHS]
        by = f", loads by {' and '.join(paths)}" if share and share >= 0.5 and paths else ""
        return f"memory-bound ({unit[0]}{by})" if unit else "memory-bound"
    # a latency-bound kernel's busiest unit says what it waits with, once it does something
    memory_side = (sol.memory_throughput_pct or 0.0) >= (sol.compute_throughput_pct or 0.0)
    if memory_side and unit and unit[1] >= DESCRIBE_MIN:
        return f"latency-bound (busiest memory unit {unit[0]} at {fmt(unit[1])}%)"
    if not memory_side and pipes and pipes[0].pct >= DESCRIBE_MIN:
        return f"latency-bound (busiest pipe {pipes[0].label} at {fmt(pipes[0].pct)}%)"
    return "latency-bound"


def check(profile: KernelReport, previous: KernelReport | None = None) -> list[Finding]:
    bound = classify_bound(profile)
    if bound is None:
        return []
    sol = profile.speed_of_light
    compute = sol.compute_throughput_pct or 0.0
    memory = sol.memory_throughput_pct or 0.0
    numbers = f"compute (SM) throughput {fmt(compute)}%, memory throughput {fmt(memory)}%"
    metrics: dict[str, float | str] = {"bound": bound, "compute_pct": compute, "memory_pct": memory}
    if bound == "latency":
        return [
            Finding(
                rule=NAME,
                kind="bad",
                title=f"The kernel is latency-bound: neither compute ({fmt(compute)}%) nor "
                f"memory ({fmt(memory)}%) reaches {LATENCY_THRESHOLD:.0f}% of peak.",
                text=f"Both units sit below {LATENCY_THRESHOLD:.0f}% of peak ({numbers}), "
                f"so warps spend their time waiting rather than using a unit ({SECTION}).",
                section=SECTION,
                weight=100.0 - max(compute, memory),
                metrics=metrics,
                evidence=(ev(profile, "compute_pct", "<", LATENCY_THRESHOLD),
                          ev(profile, "memory_pct", "<", LATENCY_THRESHOLD)),
            )
        ]
    if bound == "compute":
        from harness.findings.pipes import busiest_pipes
        from harness.findings.tensor_core import tensor_use

        # a tensor-core kernel is compute-bound by its tensor pipe (see `classify`)
        side = "compute_side_pct" if tensor_use(profile) is not None else "compute_pct"

        kind = "good" if compute >= LATENCY_THRESHOLD else "info"
        saturated = " and near saturation" if compute >= HIGH_THRESHOLD else ""
        pipes = busiest_pipes(profile)
        on_pipe = f" on the {pipes[0].label} pipe ({fmt(pipes[0].pct)}%)" if pipes else ""
        return [
            Finding(
                rule=NAME,
                kind=kind,
                title=f"The kernel is compute-bound{saturated}{on_pipe}: the SM reaches "
                f"{fmt(compute)}% of its peak throughput (memory {fmt(memory)}%).",
                text=f"Compute is the busiest unit ({numbers}) ({SECTION}).",
                section=SECTION,
                weight=compute,
                metrics=metrics,
                evidence=(ev(profile, side, ">=", LATENCY_THRESHOLD),),
            )
        ]
    unit = busiest_memory_unit(profile)
    unit_name, unit_pct = unit if unit else ("memory", memory)
    metrics["memory_unit"] = unit_name
    # Memory-bound with idle compute is the classic sign of too little reuse.
    kind = "bad" if compute < LATENCY_THRESHOLD else "info"
    return [
        Finding(
            rule=NAME,
            kind=kind,
            title=f"The kernel is memory-bound: memory throughput reaches {fmt(memory)}% of "
            f"peak (busiest unit {unit_name} at {fmt(unit_pct)}%) while compute sits at "
            f"{fmt(compute)}%.",
            text=f"Memory is the busiest unit ({numbers}; {unit_name} throughput "
            f"{fmt(unit_pct)}%) ({SECTION}).",
            section=SECTION,
            weight=memory - compute,
            metrics=metrics,
            evidence=(ev(profile, "memory_pct", ">=", LATENCY_THRESHOLD),),
        )
    ]
