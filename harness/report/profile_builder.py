"""Build the typed `KernelProfile` of each kernel of a report.

Each field reads one named metric (see the comments in `kernel_profile`). A metric the
report does not hold is None ("not collected"), never zero and never an error: metric names
differ across architectures and ncu versions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.report.kernel_profile import (
    BankConflictStats,
    Coalescing,
    KernelProfile,
    LaunchConfig,
    MemoryWidths,
    Number,
    Occupancy,
    OpcodeCount,
    RuleResult,
    Scheduler,
    SharedBankConflicts,
    SpeedOfLight,
    StallReason,
    WarpState,
)
from harness.report.memory_widths import access_widths
from harness.report.ncu_import import import_ncu_report
from harness.report.reportfile import KernelRef, open_report, select_kernels
from harness.report.rule_text import RULE_TYPES, SPEEDUP_TYPES, plain_text

STALL_METRIC = re.compile(
    r"^smsp__average_warps_issue_stalled_(?P<reason>.+)_per_issue_active\.ratio$"
)
OCCUPANCY_LIMITERS = ("registers", "shared_mem", "warps", "blocks", "barriers")


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


def _excess(m: _Metrics, derived: str, total: str, ideal: str) -> Number:
    value = m.number(derived)
    if value is not None:
        return value
    total_value, ideal_value = m.number(total), m.number(ideal)
    if total_value is None or ideal_value is None:
        return None
    return max(total_value - ideal_value, 0.0)


def _coalescing(m: _Metrics) -> Coalescing:
    return Coalescing(
        global_sectors=m.number("memory_l2_theoretical_sectors_global"),
        global_excessive_sectors=_excess(
            m,
            "derived__memory_l2_theoretical_sectors_global_excessive",
            "memory_l2_theoretical_sectors_global",
            "memory_l2_theoretical_sectors_global_ideal",
        ),
        shared_wavefronts=m.number("memory_l1_wavefronts_shared"),
        shared_excessive_wavefronts=_excess(
            m,
            "derived__memory_l1_wavefronts_shared_excessive",
            "memory_l1_wavefronts_shared",
            "memory_l1_wavefronts_shared_ideal",
        ),
    )


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


def read_rules(action: Any) -> tuple[RuleResult, ...]:
    """ncu's rule results of one action, markup resolved; empty placeholders dropped."""
    rules = []
    for result in action.rule_results():
        if not result.has_rule_message():
            continue
        message = result.rule_message()
        text = plain_text(str(message.get("message", "")))
        rule_type = RULE_TYPES.get(int(message.get("type", 0)), "NONE")
        if not text.strip() and rule_type == "NONE":
            continue  # an empty placeholder result: ncu prints nothing for it
        speedup_pct: Number = None
        speedup_type: str | None = None
        if result.has_speedup_estimation():
            estimate = result.speedup_estimation()
            speedup_pct = float(estimate["speedup"])
            speedup_type = SPEEDUP_TYPES.get(int(estimate["type"]))
        rules.append(
            RuleResult(
                name=str(result.rule_identifier()),
                title=str(message.get("title") or result.name()),
                type=rule_type,  # type: ignore[arg-type]
                message=text,
                speedup_pct=speedup_pct,
                speedup_type=speedup_type,
                section=str(result.section_identifier()) or None,
            )
        )
    return tuple(rules)


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


def build_profile(kernel: KernelRef) -> KernelProfile:
    """The typed profile of one kernel of a loaded report."""
    m = _Metrics(kernel.action)
    widths = m.instances("sass__inst_executed_per_opcode_with_modifier_all") or {}
    return KernelProfile(
        kernel_id=kernel.kernel_id,
        name=kernel.name,
        demangled_name=kernel.demangled_name,
        device=m.text("device__attribute_display_name"),
        compute_capability=_compute_capability(m),
        speed_of_light=_speed_of_light(m),
        launch=_launch(m),
        occupancy=_occupancy(m),
        warp_state=_warp_state(m),
        scheduler=_scheduler(m),
        bank_conflicts=_bank_conflicts(m),
        coalescing=_coalescing(m),
        instruction_mix=_instruction_mix(m),
        memory_widths=MemoryWidths(accesses=access_widths(widths)),
        executed_instructions=m.number("smsp__inst_executed.sum"),
        local_memory_spill_requests=m.number("derived__local_spilling_requests"),
        rules=read_rules(kernel.action),
        nvtx_ranges=_nvtx_ranges(kernel.action),
    )


def load_profiles(path: Path | str, kernel_regex: str | None = None) -> list[KernelProfile]:
    """Open a report and build the profile of every (matching) kernel, in report order."""
    import_ncu_report()
    report = open_report(path)
    return [build_profile(kernel) for kernel in select_kernels(report, kernel_regex)]
