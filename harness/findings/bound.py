"""Which unit binds: memory-, compute- or latency-bound, as ncu's speed-of-light rule says.

ncu's SOLBottleneck rule: when compute (SM) and memory throughput are both below 60% of
peak the kernel is latency-bound; at or above 80% the busiest unit is saturated; between
the two, the higher of the two says where to look.
"""

from __future__ import annotations

from typing import Literal

from harness.findings import shape
from harness.findings.evidence import ev
from harness.findings.model import Finding, fmt
from harness.report import KernelReport

NAME = "bound"
SECTION = "GPU Speed Of Light Throughput"
LATENCY_THRESHOLD = 60.0  # ncu: below this for both, "latency issues"
HIGH_THRESHOLD = 80.0  # ncu: "utilizing greater than 80.0% of ... the device"
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
    known = {name: value for name, value in units.items() if value is not None}
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


def describe_bound(profile: KernelReport) -> str:
    """The binding unit in a few words, e.g. "compute-bound (FP64 pipe at 86.7%)",
    "memory-bound (DRAM)", "latency-bound (busiest memory unit L2 at 47.2%)"."""
    from harness.findings.feeds import ASYNC_PATHS, async_share, main_paths
    from harness.findings.pipes import busiest_pipes, content  # pipes reads bound's thresholds too
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
        busy_with = summary(profile) if tensor else content(pipes[0].pipe)
        near = ", near its peak" if tensor and near_peak(profile) is not None else ""
        return (f"compute-bound ({pipes[0].label} pipe at {fmt(pipes[0].pct)}%{near}"
                + (f": {busy_with})" if busy_with else ")"))
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


_MEMORY_FIX = {
    "L1/TEX": (
        "Reuse data from registers.",
        "The L1/TEX unit (which also serves shared memory) is the busiest unit, so every load "
        "that can come from a register instead takes pressure off it.",
        "What if each thread computed several outputs and kept the operands it reuses in "
        "registers, so fewer loads go through L1/TEX and shared memory?",
    ),
    "L2": (
        "Keep data closer to the SM.",
        "L2 is the busiest memory unit, so tiles that are re-read from L2 should be staged in "
        "shared memory once per block.",
        "What if we staged the tiles each block re-reads in shared memory, so L2 serves each "
        "byte once per block?",
    ),
    "DRAM": (
        "Move fewer bytes from DRAM.",
        "DRAM bandwidth binds, so only a higher arithmetic intensity (more FLOPs per byte "
        "loaded) makes the kernel faster.",
        "What if each loaded element were reused more often (larger tiles), raising the "
        "arithmetic intensity past the roofline's ridge point?",
    ),
}


# the same for a kernel that streams (`shape.tiles` is false): no tiles to enlarge or stage
_STREAMING_FIX = {
    "L1/TEX": (
        "Issue fewer L1 accesses.",
        "The L1/TEX unit (which also serves shared memory) is the busiest unit: every load, "
        "store and shared-memory round trip passes through it.",
        "What if loads were 128-bit wide and partial results stayed in registers (warp "
        "shuffles instead of shared memory)?",
    ),
    "L2": (
        "Touch L2 fewer times.",
        "L2 is the busiest memory unit: the kernel's data passes through it more than once "
        "or in small pieces.",
        "What if the passes over the same data were fused into one, or the data re-read "
        "kept L2-resident (an access policy window) and read in full sectors?",
    ),
    "DRAM": (
        "Move fewer bytes.",
        "DRAM bandwidth binds a kernel that uses each byte about once: only fewer bytes make "
        "it faster.",
        "What if the data were stored in a narrower type, or this kernel were fused with the "
        "one that writes its input, so the bytes cross DRAM once?",
    ),
}


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
                fix_title="Hide latency with more independent work.",
                fix_text="Neither unit is busy: the schedulers run out of ready warps. More "
                "warps per SM, or more independent instructions per warp, keep the units fed.",
                what_if="What if each warp had more independent instructions in flight "
                "(more outputs per thread, loads issued ahead of their use)?",
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
    advice = _MEMORY_FIX if shape.tiles(profile) else _STREAMING_FIX
    fix_title, fix_text, what_if = advice.get(unit_name, advice["L1/TEX"])
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
            fix_title=fix_title if kind == "bad" else None,
            fix_text=fix_text if kind == "bad" else None,
            what_if=what_if if kind == "bad" else None,
            weight=memory - compute,
            metrics=metrics,
            evidence=(ev(profile, "memory_pct", ">=", LATENCY_THRESHOLD),),
        )
    ]
