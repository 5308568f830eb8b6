"""The typed KernelReport equals the report's raw metrics and ncu's own rule text."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ncu_details import parse_details
from packed_fixtures import NAIVE_SMEM_DETAILS, NAIVE_SMEM_REPORT

from harness.report.builder import build_kernel_report, load_kernel_reports
from harness.report.memory_widths import classify_opcode
from harness.report.model import AsyncCopies, KernelReport
from harness.report.reportfile import KernelRef, export_metrics, open_report
from harness.report.rule_text import format_speedup, plain_text, speedup_label

# typed field (dotted path on KernelReport) -> the metric it must equal
FIELD_METRICS = {
    "speed_of_light.duration_ns": "gpu__time_duration.sum",
    "speed_of_light.elapsed_cycles": "gpc__cycles_elapsed.max",
    "speed_of_light.sm_active_cycles": "sm__cycles_active.avg",
    "speed_of_light.sm_frequency_hz": "gpc__cycles_elapsed.avg.per_second",
    "speed_of_light.dram_frequency_hz": "dram__cycles_elapsed.avg.per_second",
    "speed_of_light.compute_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "speed_of_light.memory_throughput_pct":
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "speed_of_light.dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "speed_of_light.l1_throughput_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "speed_of_light.l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "launch.grid_size": "launch__grid_size",
    "launch.block_size": "launch__block_size",
    "launch.threads": "launch__thread_count",
    "launch.registers_per_thread": "launch__registers_per_thread",
    "launch.shared_mem_static_bytes": "launch__shared_mem_per_block_static",
    "launch.shared_mem_dynamic_bytes": "launch__shared_mem_per_block_dynamic",
    "launch.shared_mem_config_bytes": "launch__shared_mem_config_size",
    "launch.waves_per_sm": "launch__waves_per_multiprocessor",
    "occupancy.theoretical_pct": "sm__maximum_warps_per_active_cycle_pct",
    "occupancy.achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "occupancy.theoretical_active_warps": "sm__maximum_warps_avg_per_active_cycle",
    "occupancy.achieved_active_warps": "sm__warps_active.avg.per_cycle_active",
    "warp_state.cycles_per_issued_instruction": "smsp__average_warp_latency_per_inst_issued.ratio",
    "warp_state.cycles_per_executed_instruction":
        "smsp__average_warps_active_per_inst_executed.ratio",
    "warp_state.avg_active_threads_per_warp": "smsp__thread_inst_executed_per_inst_executed.ratio",
    "scheduler.active_warps": "smsp__warps_active.avg.per_cycle_active",
    "scheduler.eligible_warps": "smsp__warps_eligible.avg.per_cycle_active",
    "scheduler.issued_warps": "smsp__issue_active.avg.per_cycle_active",
    "scheduler.no_eligible_pct": "smsp__issue_inst0.avg.pct_of_peak_sustained_active",
    "scheduler.one_or_more_eligible_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "bank_conflicts.loads.requests": "smsp__sass_inst_executed_op_shared_ld.sum",
    "bank_conflicts.loads.wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "bank_conflicts.loads.conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bank_conflicts.stores.requests": "smsp__sass_inst_executed_op_shared_st.sum",
    "bank_conflicts.stores.wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "bank_conflicts.stores.conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "coalescing.loads.sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "coalescing.loads.bytes_per_sector":
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "coalescing.loads.instructions": "smsp__sass_inst_executed_op_global_ld.sum",
    "coalescing.stores.sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "coalescing.stores.bytes_per_sector":
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "coalescing.stores.instructions": "smsp__sass_inst_executed_op_global_st.sum",
    "executed_instructions": "smsp__inst_executed.sum",
    "local_memory_spill_requests": "derived__local_spilling_requests",
}


@pytest.fixture(scope="module")
def profiles() -> list[KernelReport]:
    return load_kernel_reports(NAIVE_SMEM_REPORT)


@pytest.fixture(scope="module")
def raw() -> dict[int, dict[str, Any]]:
    frame = export_metrics(NAIVE_SMEM_REPORT)
    aggregate = frame[frame.instance == ""]
    return {k: dict(zip(g.metric, g.value, strict=True)) for k, g in aggregate.groupby("kernel_id")}


def _field(profile: KernelReport, path: str) -> Any:
    value: Any = profile
    for part in path.split("."):
        value = getattr(value, part)
    return value


def test_profiles_identify_both_kernels(profiles) -> None:
    assert [(p.kernel_id, p.name) for p in profiles] == [(0, "sgemm_naive"), (1, "sgemm_smem")]
    assert all(p.device == "NVIDIA H100 80GB HBM3" for p in profiles)
    assert all(p.compute_capability == "9.0" for p in profiles)
    assert profiles[0].launch.grid == (32, 32, 1) and profiles[0].launch.block == (32, 32, 1)
    assert profiles[1].launch.block == (1024, 1, 1)


def test_typed_fields_equal_their_raw_metrics(profiles, raw) -> None:
    for profile in profiles:
        metrics = raw[profile.kernel_id]
        for path, metric in FIELD_METRICS.items():
            assert metrics[metric] is not None, metric
            assert _field(profile, path) == float(metrics[metric]), (profile.name, path)


def test_occupancy_block_limits_and_limiter(profiles, raw) -> None:
    for profile in profiles:
        for name, value in profile.occupancy.block_limits.items():
            assert value == raw[profile.kernel_id][f"launch__occupancy_limit_{name}"]
    assert profiles[0].occupancy.limiters == ("registers", "warps")  # 2 blocks of 1024 threads
    assert profiles[1].occupancy.block_limits["shared_mem"] == 3.0


def test_stalls_are_every_reason_sorted_with_ncu_labels(profiles, raw) -> None:
    pattern = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")
    for profile in profiles:
        metrics = raw[profile.kernel_id]
        expected = {m.group(1): v for name, v in metrics.items() if (m := pattern.match(name))}
        stalls = profile.warp_state.stalls
        assert {s.reason: s.cycles_per_issue for s in stalls} == expected
        values = [s.cycles_per_issue for s in stalls]
        assert values == sorted(values, reverse=True)
    naive, smem = profiles
    assert [s.label for s in naive.warp_state.stalls[:3]] == [
        "LG Throttle", "Long Scoreboard", "Not Selected"]
    assert naive.warp_state.stall("lg_throttle") == pytest.approx(393.0504819390198)
    assert smem.warp_state.stalls[0].label == "MIO Throttle"
    assert smem.warp_state.stall("barrier") > 0
    assert naive.warp_state.stall("no_such_reason") is None


def test_bank_conflicts_match_ncu_rule_numbers(profiles) -> None:
    # ncu: "on average a 1.1 - way bank conflict across all 2097152 shared store requests.
    # This results in 279780 bank conflicts, which represent 11.77% of the overall 2376932
    # wavefronts for shared stores."
    stores = profiles[1].bank_conflicts.stores
    assert (stores.requests, stores.conflicts, stores.wavefronts) == (2097152, 279780, 2376932)
    assert f"{stores.ways:.1f}" == "1.1"
    assert f"{stores.conflict_share_pct:.2f}" == "11.77"
    assert profiles[0].bank_conflicts.loads.ways is None  # no shared loads: undefined, not 0


def test_memory_widths_from_sass_opcodes(profiles, raw) -> None:
    naive, smem = profiles
    widths = naive.memory_widths
    assert widths.executed("global", "load") == raw[0]["smsp__sass_inst_executed_op_global_ld.sum"]
    assert widths.executed("global", "load", 32) == 67141632.0
    assert widths.vectorized_share_pct("global", "load") == 0.0  # "no reads are vectorized"
    assert widths.vectorized_share_pct("shared", "load") is None  # naive has no shared loads
    shared = smem.memory_widths
    assert shared.executed("shared", "load") == raw[1]["smsp__sass_inst_executed_op_shared_ld.sum"]
    assert shared.executed("shared", "load", 128) == 8388608.0  # LDS.128
    assert shared.executed("shared", "store") == raw[1]["smsp__sass_inst_executed_op_shared_st.sum"]
    assert shared.executed("global", "store") == raw[1]["smsp__sass_inst_executed_op_global_st.sum"]
    assert shared.vectorized_share_pct("shared", "load") == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("opcode", "expected"),
    [
        ("LDG.E.128", ("global", "load", 128)),
        ("LDG.E", ("global", "load", 32)),
        ("LDG.E.64.CONSTANT", ("global", "load", 64)),
        ("LDG.E.U8", ("global", "load", 8)),
        ("LDS.U.128", ("shared", "load", 128)),
        ("STS.64", ("shared", "store", 64)),
        ("LDGSTS.E.BYPASS.128", ("global", "load", 128)),
        ("LDL", ("local", "load", 32)),
        ("STL.64", ("local", "store", 64)),
        ("LDSM.16.M88.4", ("shared", "load", 128)),
        ("ATOMS.ADD", ("shared", "atomic", 32)),
        ("LDC.64", ("constant", "load", 64)),
        ("FFMA.FTZ", None),
        ("UIADD3", None),
    ],
)
def test_classify_opcode(opcode: str, expected) -> None:
    assert classify_opcode(opcode) == expected


def test_instruction_mix_adds_up(profiles, raw) -> None:
    for profile in profiles:
        mix = profile.instruction_mix
        assert sum(o.executed for o in mix) == raw[profile.kernel_id]["smsp__inst_executed.sum"]
        assert sum(o.share_pct for o in mix) == pytest.approx(100.0)
        assert [o.executed for o in mix] == sorted((o.executed for o in mix), reverse=True)
    assert profiles[0].instruction_mix[0].opcode == "LDG"
    assert profiles[1].instruction_mix[0].opcode == "LDS"


def test_rules_equal_ncu_plain_text(profiles) -> None:
    details = parse_details(NAIVE_SMEM_DETAILS)
    report = open_report(NAIVE_SMEM_REPORT)
    for profile, kernel in zip(profiles, report.kernels, strict=True):
        names = {str(s.identifier()): str(s.name()) for s in kernel.action.sections()}
        theirs = {s.name: list(s.rules) for s in details[profile.name]}
        for rule in profile.rules:
            ncu_rule = theirs[names[rule.section]].pop(0)
            assert rule.tag == ncu_rule.tag
            assert " ".join(rule.message.split()) == " ".join(ncu_rule.text.split())
            assert "@" not in rule.message
            if rule.speedup_pct is None:
                assert ncu_rule.heading is None
            else:
                heading = f"{speedup_label(rule.speedup_type)}: {format_speedup(rule.speedup_pct)}"
                assert heading == ncu_rule.heading
        assert all(not left for left in theirs.values()), "ncu shows rules the profile lacks"
    titles = {r.title for r in profiles[1].rules}
    assert "Shared Store Bank Conflicts" in titles
    uncoalesced = next(r for r in profiles[0].rules if r.name == "UncoalescedGlobalAccess")
    assert uncoalesced.type == "OPT" and uncoalesced.speedup_type == "global"
    assert "941359104 excessive sectors" in uncoalesced.message


def test_plain_text_resolves_link_markup() -> None:
    assert plain_text("see the @section:WarpStateStats:Warp State Statistics@ section") == (
        "see the Warp State Statistics section")
    assert plain_text("The @url:Profiling Guide:https://docs.nvidia.com/x.html#a@ says") == (
        "The Profiling Guide (https://docs.nvidia.com/x.html#a) says")


class _OlderAction:
    """A real action that shows only some of its metrics and no rules, sections or SASS: the
    report of an older ncu or another architecture, where most metrics are absent."""

    def __init__(self, action: Any, keep: set[str]) -> None:
        self._action, self._keep = action, keep

    def name(self, base: Any = None) -> str:
        return "old_kernel"

    def metric_names(self) -> tuple[str, ...]:
        return tuple(n for n in self._action.metric_names() if n in self._keep)

    def metric_by_name(self, name: str) -> Any:
        return self._action.metric_by_name(name) if name in self._keep else None

    def rule_results(self) -> tuple[()]:
        return ()

    def nvtx_state(self) -> None:
        return None

    def sections(self) -> tuple[()]:
        return ()

    def sass_by_pc(self, pc: int) -> str:
        return ""

    def source_files(self) -> dict[str, str]:
        return {}


def test_missing_metrics_are_none_not_zero() -> None:
    real = open_report(NAIVE_SMEM_REPORT).kernels[0].action
    action = _OlderAction(real, {
        "gpu__time_duration.sum",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
    })
    kernel = KernelRef(kernel_id=0, name="old_kernel", range_index=0, action_index=0,
                       action=action)
    profile = build_kernel_report(kernel)
    assert profile.speed_of_light.duration_ns == 5511008.0
    assert profile.speed_of_light.elapsed_cycles is None
    assert profile.launch.grid is None and profile.launch.registers_per_thread is None
    assert profile.occupancy.block_limits == dict.fromkeys(
        ("registers", "shared_mem", "warps", "blocks", "barriers"))
    assert profile.occupancy.limiters == ()
    assert profile.bank_conflicts.stores.conflicts is None
    assert profile.bank_conflicts.stores.ways is None
    assert profile.coalescing.global_excess_pct is None
    assert profile.instruction_mix == () and profile.memory_widths.accesses == ()
    assert profile.warp_state.stall("barrier") == 0.0  # collected, and zero for this kernel
    assert profile.warp_state.stalls[0].label == "Barrier"
    # "No Eligible" is 100 - "One or More Eligible" when its own metric is missing.
    one_or_more = real.metric_by_name("smsp__issue_active.avg.pct_of_peak_sustained_active")
    assert profile.scheduler.no_eligible_pct == pytest.approx(100.0 - one_or_more.value())
    assert profile.device is None and profile.compute_capability is None
    assert profile.pipes == () and profile.sass == () and profile.instruction_classes == ()
    assert profile.divergence.active_threads_per_warp is None
    assert profile.atomics.global_atom_requests is None
    assert profile.local_memory.spill_instructions is None
    assert profile.metric("gpu__time_duration.sum") == 5511008.0
    assert profile.metric("gpc__cycles_elapsed.max") is None
    # of the three the older report holds, the page metrics
    assert set(profile.metrics) == {"gpu__time_duration.sum"}


def test_rule_types_follow_ncu_report_msgtype_enum() -> None:
    import ncu_report

    from harness.report.rule_text import RULE_TYPES

    enum = {ncu_report.MsgType_NONE: "NONE", ncu_report.MsgType_OK: "OK",
            ncu_report.MsgType_OPTIMIZATION: "OPT", ncu_report.MsgType_WARNING: "WARN",
            ncu_report.MsgType_ERR: "ERROR"}
    assert enum == RULE_TYPES


def test_kernel_filter_in_load_kernel_reports() -> None:
    assert [p.name for p in load_kernel_reports(NAIVE_SMEM_REPORT, "smem")] == ["sgemm_smem"]


def test_lane_bytes_only_where_the_opcode_counts_match_the_instructions() -> None:
    from harness.report.builder import _lane_bytes

    opcodes = {"LDG.E.128": 750.0, "LDG.E": 250.0, "LDGSTS.E.BYPASS.128": 4000.0,
               "STG.E.64": 10.0, "LDS": 5000.0, "LD.E": 300.0}
    # LDG only: cp.async (LDGSTS) and generic (LD) loads are other instructions
    assert _lane_bytes(opcodes, "LDG", 1000.0) == (pytest.approx(0.75 * 16 + 0.25 * 4), 4.0)
    # 5% apart still describes them (predicated-off instructions), more does not
    assert _lane_bytes(opcodes, "LDG", 1000.0 / 1.049)[0] is not None
    assert _lane_bytes(opcodes, "LDG", 952.0) == (None, None)
    assert _lane_bytes(opcodes, "STG", 10.0) == (8.0, 8.0)
    assert _lane_bytes(opcodes, "STG", None) == (None, None)
    assert _lane_bytes(opcodes, "STG", 0.0) == (None, None)
    assert _lane_bytes({}, "LDG", 1000.0) == (None, None)


def test_the_coalescing_record_of_the_naive_kernel(profiles) -> None:
    loads, stores = profiles[0].coalescing.loads, profiles[0].coalescing.stores
    assert (loads.lane_bytes, stores.lane_bytes) == (4.0, 4.0)  # LDG.E / STG.E: 32 bits
    assert (loads.narrowest_lane_bytes, stores.narrowest_lane_bytes) == (4.0, 4.0)
    # per pair of loads: 33 sectors moved, 132 distinct bytes; one of the two a broadcast
    assert loads.ideal_sectors == pytest.approx(1108344832 * 5 / 33, rel=1e-3)
    # no cp.async: nothing executed, its sectors (collected by `full`'s widget) zero
    assert profiles[0].coalescing.async_copies == AsyncCopies(sectors=0.0, instructions=0,
                                                              lane_bytes=None)
    assert "cp.async loads" not in profiles[0].coalescing.directions()


class _Value:
    def __init__(self, value: float) -> None:
        self._value = value

    def has_value(self) -> bool:
        return True

    def value(self) -> float:
        return self._value


class _Action:
    """Just what `_Metrics` asks of an ncu_report action: names and values."""

    def __init__(self, values: dict[str, float]) -> None:
        self._values = values

    def metric_names(self) -> list[str]:
        return list(self._values)

    def metric_by_name(self, name: str) -> _Value:
        return _Value(self._values[name])


def test_cp_async_sectors_are_both_caches_summed_and_widths_from_the_opcodes() -> None:
    from harness.report.builder import _async_copies, _Metrics

    stem = "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_"
    opcodes = {"LDGSTS.E.BYPASS.128": 300.0, "LDGSTS.E": 100.0, "LDG.E.128": 50.0}
    both = _Metrics(_Action({f"{stem}access.sum": 400.0, f"{stem}bypass.sum": 5000.0}))
    # 300 copies of 16 bytes a lane and 100 of 4: 13 bytes a lane on average
    assert _async_copies(both, opcodes) == AsyncCopies(5400.0, 400.0, 13.0)
    # one cache's count alone is theirs; neither collected (a report from before `pages`
    # asked for them): no sectors, and the copies are not judged
    bypass = _Metrics(_Action({f"{stem}bypass.sum": 5000.0}))
    assert _async_copies(bypass, opcodes).sectors == 5000.0
    assert _async_copies(_Metrics(_Action({})), opcodes).sectors is None
    # the opcodes not collected: no copies to judge
    assert _async_copies(both, {}) == AsyncCopies(5400.0, 0, None)
