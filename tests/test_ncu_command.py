"""The ncu command lines, argument by argument: what a run measures is pinned here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.profile.ncu_command import (
    KernelFilter,
    NcuSettings,
    ncu_args,
    parse_version,
    runner_program,
    runner_range,
    variant_filter,
)

PINNED = [
    "--clock-control", "base", "--cache-control", "all", "--replay-mode", "kernel",
    "--import-source", "yes",
]


PAGES_ARGS = [
    "--section", "SpeedOfLight",
    "--section", "SpeedOfLight_RooflineChart",
    "--section", "SpeedOfLight_HierarchicalSingleRooflineChart",
    "--section", "LaunchStats",
    "--section", "Occupancy",
    "--section", "ComputeWorkloadAnalysis",
    "--section", "InstructionStats",
    "--section", "MemoryWorkloadAnalysis",
    "--section", "MemoryWorkloadAnalysis_Chart",
    "--section", "MemoryWorkloadAnalysis_Tables",
    "--section", "SchedulerStats",
    "--section", "WarpStateStats",
    "--section", "SourceCounters",
    "--section", "WorkloadDistribution",
    "--metrics", "sass__inst_executed_per_opcode,sass__inst_executed_per_opcode_with_modifier_all,"
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,"
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum,"
    "lts__t_sectors_srcunit_tex_op_read.sum,dram__sectors_read.sum",
]
PAGES_METRICS_ARG = PAGES_ARGS[-1]


def test_default_settings_are_the_pages_set_pinned_clock_cache_replay_and_config_file() -> None:
    # `pages` is no ncu set: its sections by name, and no --set (ncu then collects only those).
    assert NcuSettings().args() == ["--config-file", "off", *PAGES_ARGS, *PINNED]


def test_full_is_one_flag_away() -> None:
    assert NcuSettings(set="full").args() == ["--config-file", "off", "--set", "full", *PINNED]


def test_extra_sections_and_metrics_join_the_pages_set_once() -> None:
    settings = NcuSettings(sections=("PmSampling", "SourceCounters"),
                           metrics=("sass__inst_executed_per_opcode", "dram__bytes.sum"))
    argv = settings.args()
    assert argv[:-len(PINNED)] == [
        "--config-file", "off", *PAGES_ARGS[:-2], "--section", "PmSampling",
        "--metrics", f"{PAGES_METRICS_ARG},dram__bytes.sum",
    ]


def test_sections_metrics_and_clock_control_none() -> None:
    settings = NcuSettings(
        set="basic",
        sections=("SourceCounters", "WarpStateStats"),
        metrics=("gpu__time_duration.sum", "launch__registers_per_thread"),
        clock_control="none",
        import_source=True,
    )
    assert settings.args() == [
        "--config-file", "off",
        "--set", "basic",
        "--section", "SourceCounters",
        "--section", "WarpStateStats",
        "--metrics", "gpu__time_duration.sum,launch__registers_per_thread",
        "--clock-control", "none", "--cache-control", "all", "--replay-mode", "kernel",
        "--import-source", "yes",
    ]


def test_unknown_set_or_clock_control_is_refused() -> None:
    with pytest.raises(ValueError, match="section set"):
        NcuSettings(set="everything")
    with pytest.raises(ValueError, match="clock control"):
        NcuSettings(clock_control="boost")


def test_variant_capture_by_nvtx_range_takes_its_kernels_in_the_range() -> None:
    argv = ncu_args(
        "/opt/ncu/ncu",
        NcuSettings(),
        variant_filter("register_tiled_4096", capture="nvtx", kernel_name="sgemm_rt", warmup=3),
        Path("/runs/r1/register_tiled_4096.ncu-rep"),
        ["/usr/bin/python3", "-m", "harness.gpu.runner", "--variant", "register_tiled"],
    )
    assert argv == [
        "/opt/ncu/ncu",
        "--config-file", "off", *PAGES_ARGS, *PINNED,
        "--nvtx", "--nvtx-include", "ncuh-register_tiled_4096/",
        # every launch of the variant's kernel inside the one run's range, nothing else
        "-k", "regex:^sgemm_rt$",
        "-o", "/runs/r1/register_tiled_4096.ncu-rep", "-f",
        "/usr/bin/python3", "-m", "harness.gpu.runner", "--variant", "register_tiled",
    ]


def test_variant_capture_by_kernel_name_skips_the_warmup_launches() -> None:
    kernel_filter = variant_filter("naive_256", capture="kernel", kernel_name="sgemm.naive",
                                   warmup=5)
    assert kernel_filter.args() == [
        "-k", r"regex:^sgemm\.naive$", "--launch-skip", "5", "--launch-count", "1",
    ]


def test_user_program_filters_pass_through_verbatim() -> None:
    kernel_filter = KernelFilter(
        kernel="regex:my_kernel", launch_skip=2, launch_count=4,
        nvtx_include=("step/", "Domain@train"),
    )
    argv = ncu_args("ncu", NcuSettings(set="detailed"), kernel_filter, "out/program.ncu-rep",
                    ["python", "my_kernel.py", "--n", "1024"])
    assert argv == [
        "ncu", "--config-file", "off", "--set", "detailed", *PINNED,
        "--nvtx", "--nvtx-include", "step/", "--nvtx-include", "Domain@train",
        "-k", "regex:my_kernel", "--launch-skip", "2", "--launch-count", "4",
        "-o", "out/program.ncu-rep", "-f",
        "python", "my_kernel.py", "--n", "1024",
    ]


def test_no_filter_adds_no_filter_arguments() -> None:
    assert KernelFilter().args() == []


def test_a_program_is_required() -> None:
    with pytest.raises(ValueError, match="program"):
        ncu_args("ncu", NcuSettings(), KernelFilter(), "r.ncu-rep", [])


def test_runner_program_argv() -> None:
    argv = runner_program(
        "register_tiled", (4096, 2048, 1024), label="register_tiled_4096x2048x1024",
        params={"TM": 8, "BM": 64}, warmup=3, capture="nvtx", python="python3",
        project="/p/ncuh.toml",
    )
    assert argv == [
        "python3", "-m", "harness.gpu.runner", "--project", "/p/ncuh.toml",
        "--variant", "register_tiled",
        "--size", "4096x2048x1024",
        "--label", "register_tiled_4096x2048x1024",
        "--warmup", "3",
        "--capture", "nvtx",
        "--params", '{"BM":64,"TM":8}',
    ]
    assert runner_program("naive", (8, 8, 8), label="naive_8", warmup=0,
                          capture="kernel")[0] == sys.executable


def test_a_project_capture_filter_is_passed_to_ncu_as_is() -> None:
    kernel_filter = variant_filter("v_256", capture="kernel", kernel_name="regex:^tri.*fwd$",
                                   warmup=2)
    assert kernel_filter.args() == ["-k", "regex:^tri.*fwd$", "--launch-skip", "2",
                                    "--launch-count", "1"]


def test_runner_range_matches_the_nvtx_include_expression() -> None:
    assert runner_range("naive_256") == "ncuh-naive_256"
    include = variant_filter("naive_256", capture="nvtx", kernel_name="k", warmup=1).nvtx_include
    assert include == (runner_range("naive_256") + "/",)


def test_parse_version() -> None:
    text = (
        "NVIDIA (R) Nsight Compute Command Line Profiler\n"
        "Copyright (c) 2018-2025 NVIDIA Corporation\n"
        "Version 2025.3.1.0 (build 36398880) (public-release)\n"
    )
    assert parse_version(text) == "2025.3.1.0"
    assert parse_version("ncu: command not found") is None
