"""Build the typed `KernelReport` of each kernel of a report.

Each field reads one named metric (see the comments in `kernel_profile`). A metric the
report does not hold is None ("not collected"), never zero and never an error: metric names
differ across architectures and ncu versions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.report import read_cache
from harness.report.instruction_classes import classify
from harness.report.memory_widths import access_widths, classify_opcode
from harness.report.model import (
    OCCUPANCY_LIMITERS,
    AsyncCopies,
    Atomics,
    BankConflictStats,
    Coalescing,
    Divergence,
    GlobalAccesses,
    KernelReport,
    LaunchConfig,
    LocalMemory,
    MemoryWidths,
    Metric,
    Number,
    Occupancy,
    OpcodeCount,
    PipeUse,
    SassInstruction,
    Scheduler,
    SharedBankConflicts,
    SpeedOfLight,
    StallReason,
    WarpState,
)
from harness.report.ncu_import import import_ncu_report
from harness.report.page_metrics import PAGE_METRICS
from harness.report.reportfile import (
    KernelRef,
    LoadedReport,
    metric_records,
    open_report,
    reports_opened,
    select_kernels,
)
from harness.report.roofline import roofline_from
from harness.report.rules import read_rules
from harness.util import cache_wanted

STALL_METRIC = re.compile(
    r"^smsp__average_warps_issue_stalled_(?P<reason>.+)_per_issue_active\.ratio$"
)
# Compute Workload Analysis: pipe utilization over the SM's active cycles, two measures
PIPE_METRIC = re.compile(
    r"^sm__(?:inst_executed_pipe_(?P<inst>\w+?)|pipe_(?P<cycles>\w+?)_cycles_active)"
    r"\.avg\.pct_of_peak_sustained_active$"
)
PCSAMP_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


class _Metrics:
    """Typed reads of one action's metrics; anything absent or valueless reads as None."""

    def __init__(self, action: Any) -> None:
        self.action = action
        self.names = frozenset(action.metric_names())

    def metric(self, name: str) -> Any | None:
        if name not in self.names:
            return None
        metric = self.action.metric_by_name(name)
        if metric is None or not metric.has_value():
            return None
        return metric

    def number(self, name: str) -> Number:
        metric = self.metric(name)
        if metric is None:
            return None
        value = metric.value()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)

    def integer(self, name: str) -> int | None:
        value = self.number(name)
        return None if value is None else int(value)

    def text(self, name: str) -> str | None:
        metric = self.metric(name)
        if metric is None:
            return None
        value = metric.value()
        return None if value is None else str(value)

    def instances(self, name: str) -> dict[str, float] | None:
        """Instance values keyed by correlation id; None when not collected."""
        metric = self.metric(name)
        if metric is None:
            return None
        count = metric.num_instances()
        ids = metric.correlation_ids() if metric.has_correlation_ids() else None
        values: dict[str, float] = {}
        for index in range(count):
            key = str(ids.value(index)) if ids is not None else f"#{index}"
            value = metric.value(index)
            if isinstance(value, (int, float)):
                values[key] = values.get(key, 0.0) + float(value)
        return values


def read_metrics(kernel: KernelRef, wanted: Callable[[str], bool] | None = None,
                 instances: bool = True) -> dict[str, Metric]:
    """Every metric (or every `wanted` one) of the kernel, read as `ncuh export` reads them
    (one reader of values: base units, strings and enums as ncu prints them, instances by
    correlation id unless left out), in the report's order."""
    # every value (and unit) first, then the labels: the order ncu_report was always asked in
    records = list(metric_records([kernel], import_ncu_report(), wanted=wanted,
                                  instances=instances, share_labels=True))
    metrics: dict[str, Metric] = {}
    for record in records:
        value = record.value
        if isinstance(value, (bool, int, float)):
            value = float(value)
        metric = kernel.action.metric_by_name(record.metric)
        label = str(metric.label() or "") if metric is not None else ""
        if record.plain_values and None not in record.values:  # numbers: all kept
            numbers = tuple(zip(record.labels, map(float, record.values), strict=True))
        else:
            numbers = tuple((instance, float(number)) for instance, number
                            in zip(record.labels, record.values, strict=True)
                            if isinstance(number, (int, float)))
        metrics[record.metric] = Metric(
            name=record.metric, label=label, unit=str(record.unit or ""), value=value,
            instances=numbers,
        )
    return metrics


def _dims(metrics: _Metrics, prefix: str) -> tuple[int, int, int] | None:
    dims = [metrics.integer(f"{prefix}_{axis}") for axis in "xyz"]
    if any(d is None for d in dims):
        return None
    return (dims[0], dims[1], dims[2])  # type: ignore[return-value]


def _speed_of_light(m: _Metrics) -> SpeedOfLight:
    return SpeedOfLight(
        duration_ns=m.number("gpu__time_duration.sum"),
        elapsed_cycles=m.number("gpc__cycles_elapsed.max"),
        sm_active_cycles=m.number("sm__cycles_active.avg"),
        sm_frequency_hz=m.number("gpc__cycles_elapsed.avg.per_second"),
        dram_frequency_hz=m.number("dram__cycles_elapsed.avg.per_second"),
        compute_throughput_pct=m.number("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        memory_throughput_pct=m.number(
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
        ),
        dram_throughput_pct=m.number("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
        l1_throughput_pct=m.number("l1tex__throughput.avg.pct_of_peak_sustained_active"),
        l2_throughput_pct=m.number("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    )


def _launch(m: _Metrics) -> LaunchConfig:
    return LaunchConfig(
        grid=_dims(m, "launch__grid_dim"),
        block=_dims(m, "launch__block_dim"),
        grid_size=m.number("launch__grid_size"),
        block_size=m.number("launch__block_size"),
        threads=m.number("launch__thread_count"),
        registers_per_thread=m.number("launch__registers_per_thread"),
        shared_mem_static_bytes=m.number("launch__shared_mem_per_block_static"),
        shared_mem_dynamic_bytes=m.number("launch__shared_mem_per_block_dynamic"),
        shared_mem_config_bytes=m.number("launch__shared_mem_config_size"),
        waves_per_sm=m.number("launch__waves_per_multiprocessor"),
    )


def _occupancy(m: _Metrics) -> Occupancy:
    return Occupancy(
        theoretical_pct=m.number("sm__maximum_warps_per_active_cycle_pct"),
        achieved_pct=m.number("sm__warps_active.avg.pct_of_peak_sustained_active"),
        theoretical_active_warps=m.number("sm__maximum_warps_avg_per_active_cycle"),
        achieved_active_warps=m.number("sm__warps_active.avg.per_cycle_active"),
        block_limits={
            name: m.number(f"launch__occupancy_limit_{name}") for name in OCCUPANCY_LIMITERS
        },
    )


def _stall_label(metric: Any, reason: str) -> str:
    # ncu labels these "Stall MIO Throttle", "Stall Long Scoreboard", ... and "Selected".
    label = str(metric.label() or "").strip()
    if label.startswith("Stall "):
        label = label[len("Stall ") :]
    return label or reason.replace("_", " ").title()


def _warp_state(m: _Metrics) -> WarpState:
    stalls = []
    for name in m.names:
        match = STALL_METRIC.match(name)
        if not match:
            continue
        metric = m.metric(name)
        value = m.number(name)
        if metric is None or value is None:
            continue
        reason = match.group("reason")
        stalls.append(
            StallReason(reason=reason, label=_stall_label(metric, reason), cycles_per_issue=value)
        )
    stalls.sort(key=lambda s: (-s.cycles_per_issue, s.reason))
    return WarpState(
        cycles_per_issued_instruction=m.number("smsp__average_warp_latency_per_inst_issued.ratio"),
        cycles_per_executed_instruction=m.number(
            "smsp__average_warps_active_per_inst_executed.ratio"
        ),
        avg_active_threads_per_warp=m.number("smsp__thread_inst_executed_per_inst_executed.ratio"),
        stalls=tuple(stalls),
    )


def _scheduler(m: _Metrics) -> Scheduler:
    one_or_more = m.number("smsp__issue_active.avg.pct_of_peak_sustained_active")
    no_eligible = m.number("smsp__issue_inst0.avg.pct_of_peak_sustained_active")
    if no_eligible is None and one_or_more is not None:
        no_eligible = 100.0 - one_or_more  # ncu's own definition of "No Eligible"
    return Scheduler(
        active_warps=m.number("smsp__warps_active.avg.per_cycle_active"),
        eligible_warps=m.number("smsp__warps_eligible.avg.per_cycle_active"),
        issued_warps=m.number("smsp__issue_active.avg.per_cycle_active"),
        no_eligible_pct=no_eligible,
        one_or_more_eligible_pct=one_or_more,
    )


def _bank_conflicts(m: _Metrics) -> SharedBankConflicts:
    def direction(op: str) -> BankConflictStats:
        return BankConflictStats(
            requests=m.number(f"smsp__sass_inst_executed_op_shared_{op}.sum"),
            wavefronts=m.number(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"),
            conflicts=m.number(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"),
        )

    return SharedBankConflicts(loads=direction("ld"), stores=direction("st"))


# How far the SASS opcode counts of a direction may be from its hardware count for their
# widths to describe its instructions (predicated-off ones: ~1.6% on the recorded reports).
_WIDTH_COUNTS_AGREE = 0.05


def _widths(opcodes: dict[str, float], base: str) -> list[tuple[float, float]]:
    """(executed, bytes per lane) of each executed `base` opcode (LDG, STG, LDGSTS) with its
    width modifiers."""
    return [(executed, classified[2] / 8.0) for opcode, executed in opcodes.items()
            if opcode.split(".")[0] == base and executed
            and (classified := classify_opcode(opcode)) is not None]


def _executed_and_average(widths: list[tuple[float, float]]) -> tuple[float, Number]:
    """(executions, their average bytes per lane; None where none ran) of `_widths`."""
    executed = sum(count for count, _ in widths)
    average = sum(count * size for count, size in widths) / executed if executed else None
    return executed, average


def _lane_bytes(opcodes: dict[str, float], base: str,
                instructions: Number) -> tuple[Number, Number]:
    """(average, narrowest) bytes per lane of the executed `base` opcodes (LDG or STG, with
    their width modifiers), where their count agrees with the hardware's count of that
    direction's global instructions; (None, None) where it does not (generic LD/ST, opcodes
    not collected)."""
    widths = _widths(opcodes, base)
    executed, average = _executed_and_average(widths)
    if not executed or not instructions or abs(executed - instructions) > (
            _WIDTH_COUNTS_AGREE * instructions):
        return None, None
    return average, min(s for _, s in widths)


def _coalescing(m: _Metrics, opcodes: dict[str, float]) -> Coalescing:
    def direction(op: str, base: str) -> GlobalAccesses:
        instructions = m.number(f"smsp__sass_inst_executed_op_global_{op}.sum")
        average, narrowest = _lane_bytes(opcodes, base, instructions)
        return GlobalAccesses(
            sectors=m.number(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"),
            bytes_per_sector=m.number(
                f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio"),
            instructions=instructions,
            lane_bytes=average,
            narrowest_lane_bytes=narrowest,
        )

    return Coalescing(loads=direction("ld", "LDG"), stores=direction("st", "STG"),
                      async_copies=_async_copies(m, opcodes))


# cp.async's sectors, cached in L1 (.CA) or not (.CG, "bypass"): `pages` collects both by name,
# `full` through the memory tables' widget.
_ASYNC_SECTORS = tuple(f"sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_{cache}.sum"
                       for cache in ("access", "bypass"))


def _async_copies(m: _Metrics, opcodes: dict[str, float]) -> AsyncCopies:
    """The executed LDGSTS opcodes (their count and lanes' average width) and their sectors,
    cached and not summed (None where neither was collected)."""
    instructions, lane_bytes = _executed_and_average(_widths(opcodes, "LDGSTS"))
    counted = [value for name in _ASYNC_SECTORS if (value := m.number(name)) is not None]
    return AsyncCopies(sectors=sum(counted) if counted else None, instructions=instructions,
                       lane_bytes=lane_bytes)


def _instruction_mix(m: _Metrics) -> tuple[OpcodeCount, ...]:
    counts = m.instances("sass__inst_executed_per_opcode")
    if not counts:
        return ()
    total = sum(counts.values())
    mix = [
        OpcodeCount(opcode=op, executed=n, share_pct=100.0 * n / total if total else 0.0)
        for op, n in counts.items()
    ]
    mix.sort(key=lambda o: (-o.executed, o.opcode))
    return tuple(mix)


def _pipes(m: _Metrics) -> tuple[PipeUse, ...]:
    pipes = []
    for name in m.names:
        match = PIPE_METRIC.match(name)
        value = m.number(name) if match else None
        if match is None or value is None:
            continue
        metric = m.metric(name)
        pipe = match.group("inst") or match.group("cycles")
        measure = "instructions" if match.group("inst") else "cycles"
        label = str(metric.label() or "") if metric is not None else ""
        pipes.append(PipeUse(pipe=pipe, label=label or pipe.upper(), measure=measure,
                             pct=value))
    pipes.sort(key=lambda p: (-p.pct, p.pipe, p.measure))
    return tuple(pipes)


def _divergence(m: _Metrics) -> Divergence:
    return Divergence(
        active_threads_per_warp=m.number("smsp__thread_inst_executed_per_inst_executed.ratio"),
        not_predicated_off_threads_per_warp=m.number(
            "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"),
        branch_efficiency_pct=m.number("smsp__sass_average_branch_targets_threads_uniform.pct"),
        divergent_branches=m.number("smsp__sass_branch_targets_threads_divergent.sum"),
        branch_instructions=m.number("smsp__inst_executed_op_branch.sum"),
    )


def _atomics(m: _Metrics) -> Atomics:
    return Atomics(
        global_atom_requests=m.number("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"),
        global_red_requests=m.number("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"),
        shared_atom_instructions=m.number("smsp__inst_executed_op_shared_atom.sum"),
        l2_atom_sectors=m.number("lts__t_sectors_srcunit_tex_op_atom.sum"),
        l2_red_sectors=m.number("lts__t_sectors_srcunit_tex_op_red.sum"),
        l2_atomic_unit_avg_pct=m.number(
            "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed"),
        l2_atomic_unit_max_pct=m.number(
            "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed"),
    )


def _local_memory(m: _Metrics) -> LocalMemory:
    return LocalMemory(
        load_instructions=m.number("sass__inst_executed_local_loads"),
        store_instructions=m.number("sass__inst_executed_local_stores"),
        spill_instructions=m.number("sass__inst_executed_register_spilling"),
        spill_requests=m.number("derived__local_spilling_requests"),
        spill_overhead_pct=m.number("derived__local_spilling_requests_pct"),
    )


def _by_pc(metrics: dict[str, Metric], name: str) -> dict[int, float]:
    metric = metrics.get(name)
    if metric is None:
        return {}
    return {int(pc): value for pc, value in metric.instances if pc.isdigit()}


def _source_line(action: Any, pc: int) -> str | None:
    try:
        info = action.source_info(pc)
    except Exception:  # ncu_report raises on PCs outside the function in some versions
        return None
    if info is None:
        return None
    file_name, line = info.file_name(), info.line()
    if not file_name or not line:
        return None
    return f"{file_name.rsplit('/', 1)[-1]}:{line}"


def _stall_samples(name: str) -> bool:
    """A stall reason's samples by PC (not those of its warps not issued, which nothing
    reads)."""
    return name.startswith(PCSAMP_PREFIX) and not name.endswith("_not_issued")


SHARED_WAVEFRONTS = "memory_l1_wavefronts_shared"
SHARED_WAVEFRONTS_IDEAL = "memory_l1_wavefronts_shared_ideal"


def _per_pc(name: str) -> bool:
    """The per-instruction metrics `_sass` reads: executions, stall samples and shared-memory
    wavefronts by PC."""
    return (name in ("inst_executed", SHARED_WAVEFRONTS, SHARED_WAVEFRONTS_IDEAL)
            or _stall_samples(name))


def _sass(action: Any, metrics: dict[str, Metric]) -> tuple[SassInstruction, ...]:
    """Every instruction ncu counted (inst_executed by PC) or sampled, with its counters and
    its text: a stall sample is told by the instruction it sits on and, for a scoreboard wait,
    by the earlier instruction whose result it waits for (`report.stall_sites`), so the text
    of every instruction that ran or was sampled is read (one never executed carries nothing).
    `metrics` holds the `_per_pc` ones."""
    executed = _by_pc(metrics, "inst_executed")
    samples: dict[int, dict[str, int]] = {}
    for name in metrics:
        if _stall_samples(name):
            for pc, value in _by_pc(metrics, name).items():
                if value:
                    samples.setdefault(pc, {})[name[len(PCSAMP_PREFIX):]] = int(value)
    wavefronts = _by_pc(metrics, SHARED_WAVEFRONTS) if SHARED_WAVEFRONTS in metrics else None
    ideal = (_by_pc(metrics, SHARED_WAVEFRONTS_IDEAL) if SHARED_WAVEFRONTS_IDEAL in metrics
             else None)
    pcs = sorted(set(executed) | set(samples))
    texts = {pc: " ".join(str(action.sass_by_pc(pc) or "").split()) for pc in pcs
             if executed.get(pc) or pc in samples}
    result = []
    for pc in pcs:
        result.append(SassInstruction(
            pc=pc,
            sass=texts.get(pc, ""),
            executed=executed.get(pc, 0.0),
            source=_source_line(action, pc),
            stall_samples=samples.get(pc, {}),
            shared_wavefronts=None if wavefronts is None else wavefronts.get(pc, 0.0),
            shared_wavefronts_ideal=None if ideal is None else ideal.get(pc, 0.0),
        ))
    return tuple(result)


def _source_files(action: Any) -> dict[str, str]:
    try:
        return {str(path): str(text) for path, text in dict(action.source_files().items()).items()
                if text}
    except Exception:  # an ncu_report without source_files, or none imported
        return {}


def _nvtx_ranges(action: Any) -> tuple[str, ...]:
    """Names of the NVTX push/pop ranges the launch ran inside (outermost first)."""
    state = action.nvtx_state()
    if state is None:
        return ()
    names: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is None:
            continue
        for range_ in domain.push_pop_ranges():
            names.append(range_ if isinstance(range_, str) else str(range_.name()))
    return tuple(names)


def _compute_capability(m: _Metrics) -> str | None:
    major = m.integer("device__attribute_compute_capability_major")
    minor = m.integer("device__attribute_compute_capability_minor")
    if major is None or minor is None:
        return None
    return f"{major}.{minor}"


def build_kernel_report(kernel: KernelRef) -> KernelReport:
    """The typed profile of one kernel of a loaded report."""
    from harness.report.report_view import build_view

    rules = read_rules(kernel.action)
    # The details view first: ncu_report answers a few derived metrics' units ('inst' or
    # 'thread') differently once every metric of the action has been read, and the view must
    # print what ncu prints.
    details = build_view(kernel, rules)
    m = _Metrics(kernel.action)
    # the metrics the pages read by name and the per-instruction ones, not every metric
    read = read_metrics(kernel, lambda name: name in PAGE_METRICS or _per_pc(name))
    opcodes = m.instances("sass__inst_executed_per_opcode_with_modifier_all") or {}
    mix = _instruction_mix(m)
    return KernelReport(
        kernel_id=kernel.kernel_id,
        name=kernel.name,
        demangled_name=kernel.demangled_name,
        mangled_name=kernel.mangled_name,
        device=m.text("device__attribute_display_name"),
        compute_capability=_compute_capability(m),
        speed_of_light=_speed_of_light(m),
        launch=_launch(m),
        occupancy=_occupancy(m),
        warp_state=_warp_state(m),
        scheduler=_scheduler(m),
        bank_conflicts=_bank_conflicts(m),
        coalescing=_coalescing(m, opcodes),
        instruction_mix=mix,
        memory_widths=MemoryWidths(accesses=access_widths(opcodes)),
        executed_instructions=m.number("smsp__inst_executed.sum"),
        local_memory_spill_requests=m.number("derived__local_spilling_requests"),
        rules=rules,
        nvtx_ranges=_nvtx_ranges(kernel.action),
        pipes=_pipes(m),
        divergence=_divergence(m),
        atomics=_atomics(m),
        local_memory=_local_memory(m),
        instruction_classes=classify(mix),
        sass=_sass(kernel.action, read),
        source_files=_source_files(kernel.action),
        roofline=roofline_from(m.number),
        details=details,
        metrics={name: metric for name, metric in read.items() if name in PAGE_METRICS},
    )


# ncu_report answers a few derived metrics' units from what its process asked before. Reports
# of the same metric names read the same way (whole profiles, or summaries of every metric)
# leave each other's answers as they are alone; a report of other metrics, or one read another
# way (export, details views, a summary of a few metrics), may not.
Way = Literal["profiles", "summaries"]
_readings: set[tuple[Way, int]] = set()  # how each report was read, and its metric names
_counted = 0  # how many reports were opened and read one of those ways


def _asked(report: LoadedReport, way: Way | None) -> bool:
    """Note that `report` (just opened) is read `way`; whether it then reads as it would
    alone: every report opened before was read the same way and had the same names."""
    global _counted
    reading = (way, hash(frozenset(name for kernel in report.kernels
                                    for name in kernel.action.metric_names())))
    alone = way is not None and reports_opened() - 1 == _counted and not (
        _readings - {reading})
    if way is not None:
        _counted += 1
        _readings.add(reading)  # type: ignore[arg-type]
    return alone


@dataclass(frozen=True)
class BuiltReport:
    """Every kernel's typed report, and whether they are what a reading of the file alone
    gives (no report of other metrics was read before in this process)."""

    profiles: list[KernelReport]
    alone: bool


def build_report_file(path: Path | str) -> BuiltReport:
    """Open a report and build the profile of every kernel, asking ncu_report."""
    report = open_report(path)
    alone = _asked(report, "profiles")
    return BuiltReport([build_kernel_report(kernel) for kernel in report.kernels], alone)


def every_metric(name: str) -> bool:
    """The `wanted` of a summary reader that compares every metric (diff)."""
    return True


def summarize_kernel(kernel: KernelRef, wanted: Callable[[str], bool]) -> KernelReport:
    """A kernel's identity, device, rules and global accesses (which rules a page keeps
    depends on them) with the aggregate value of each `wanted` metric: the rest of the profile
    (SASS, instances, instruction mix, details view) is left empty."""
    from harness.report.report_view import build_view

    # Asked as `build_kernel_report` asks them, the view first: ncu_report answers a few units
    # (smsp__pcsamp_warps_issue_stalled_membar's) from what the action was asked before.
    build_view(kernel)
    m = _Metrics(kernel.action)
    opcodes = m.instances("sass__inst_executed_per_opcode_with_modifier_all") or {}
    return KernelReport(
        kernel_id=kernel.kernel_id, name=kernel.name, demangled_name=kernel.demangled_name,
        mangled_name=kernel.mangled_name, device=m.text("device__attribute_display_name"),
        compute_capability=_compute_capability(m), coalescing=_coalescing(m, opcodes),
        rules=read_rules(kernel.action),
        metrics=read_metrics(kernel, wanted, instances=False))


def summarize_report_file(path: Path | str, wanted: Callable[[str], bool]) -> BuiltReport:
    """`summarize_kernel` of every kernel of a report."""
    report = open_report(path)
    alone = _asked(report, "summaries" if wanted is every_metric else None)
    return BuiltReport([summarize_kernel(kernel, wanted) for kernel in report.kernels], alone)


def _read_or_kept(path: Path, read: Callable[[], BuiltReport],
                  wanted: Callable[[str], bool] | None) -> list[KernelReport]:
    """What an earlier command kept of the report at `path` (its profiles, or with `wanted`
    its summaries of every metric, which serve any `wanted`), else what `read` builds, kept
    where it reads as a reading of the report alone would. A whole profile holds only the
    metrics the pages read: it serves no summary."""
    key = read_cache.report_key(path) if cache_wanted() else None
    if key is None:
        return read().profiles
    kept = read_cache.fetch(key if wanted is None else read_cache.summary_key(key))
    if kept is not None:
        return kept
    built = read()
    # summaries of fewer metrics than every one are not kept
    if built.alone and (wanted is None or wanted is every_metric):
        read_cache.keep(key if wanted is None else read_cache.summary_key(key), built.profiles)
    return built.profiles


def load_kernel_summaries(path: Path | str,
                          wanted: Callable[[str], bool]) -> list[KernelReport]:
    """`load_kernel_reports` for a reader of metrics' aggregate values, units and rules
    (diff, history): the summaries of every metric kept where there are some, else each
    kernel's summary (`summarize_kernel`), read in a fraction of the time. Every field that a
    summary fills holds what the whole profile holds; summaries of `every_metric` are kept
    (`read_cache.summary_key`), and serve any `wanted`."""
    import_ncu_report()
    path = Path(path)
    return _read_or_kept(path, lambda: summarize_report_file(path, wanted), wanted)


def load_kernel_reports(path: Path | str, kernel_regex: str | None = None) -> list[KernelReport]:
    """Open a report and build the profile of every (matching) kernel, in report order.

    What an earlier command kept (`read_cache`) is taken as it is, keyed by the report's
    bytes.
    """
    import_ncu_report()
    if kernel_regex is not None:
        report = open_report(path)
        return [build_kernel_report(kernel) for kernel in select_kernels(report, kernel_regex)]
    path = Path(path)
    return _read_or_kept(path, lambda: build_report_file(path), None)
