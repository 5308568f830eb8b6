"""Build `ncu` command lines as argument lists (never shell strings).

Everything that changes what ncu measures is pinned here and recorded in the manifest:
`--config-file off`, `--clock-control` (default `base`), `--cache-control all` and
`--replay-mode kernel`. A project's variant runs under `python -m harness.gpu.runner`, which
launches it once inside the NVTX range `runner_range(label)` that ncu captures with `--nvtx
--nvtx-include "<range>/"` and `-k <filter>` (without NVTX, by launch count instead); a user
program (`ncuh profile -- COMMAND`) is filtered by the user's `-k`, `--launch-skip`,
`--launch-count` and `--nvtx-include`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# The NVTX range around the runner's one captured launch is the run side's (re-exported).
from harness.gpu import RANGE_PREFIX as RANGE_PREFIX
from harness.gpu import runner_range as runner_range
from harness.project import size_text

# `pages` is ncuh's own set: exactly the sections the pages, findings, diff and report read
# (ncu's `--set full` less what nobody reads), given to ncu as `--section` and `--metrics`.
SETS: tuple[str, ...] = ("pages", "full", "detailed", "basic")
DEFAULT_SET = "pages"
# Section identifiers (ncu --list-sections), each with what reads it. Left out of `full`:
# PmSampling (the timeline of counters over the kernel: several passes, read by nothing),
# Nvlink, Nvlink_Tables, Nvlink_Topology, NumaAffinity (links and host topology: a single-GPU
# kernel has nothing to say there), and the double-, half- and tensor-precision hierarchical
# roofline charts (the pages draw the single-precision roofline).
PAGES_SECTIONS: tuple[str, ...] = (
    "SpeedOfLight",                   # speed of light, bound finding, diff's throughput metrics
    "SpeedOfLight_RooflineChart",     # roofline.py: FFMA/FADD/FMUL rates, DRAM peak
    "SpeedOfLight_HierarchicalSingleRooflineChart",  # the L1/L2/DRAM single-precision roofline
    "LaunchStats",                    # launch config, waves finding, registers/shared in diff
    "Occupancy",                      # occupancy finding, limiters
    "ComputeWorkloadAnalysis",        # pipe utilization tables
    "InstructionStats",               # instruction mix (sass__inst_executed_per_opcode)
    "MemoryWorkloadAnalysis",         # memory throughput, DRAM/L2 bytes in diff
    "MemoryWorkloadAnalysis_Chart",   # the memory chart and its rules
    "MemoryWorkloadAnalysis_Tables",  # shared/L1/L2 tables: bank conflicts, coalescing, excess
    "SchedulerStats",                 # issue slots, eligible warps
    "WarpStateStats",                 # stall reasons, stalls finding
    "SourceCounters",                 # SASS per PC, hot spots, PC-sampling stalls, atomics
    "WorkloadDistribution",           # its rules (SM/L1/L2 imbalance) are findings too
)
# Metrics read by name that no section above is sure to collect on every architecture.
PAGES_METRICS: tuple[str, ...] = (
    "sass__inst_executed_per_opcode",
    "sass__inst_executed_per_opcode_with_modifier_all",  # access widths (LDG.E.128, ...)
    # cp.async's sectors (the coalescing finding), which only the memory tables' widget of
    # `full` collects; no pass more on an H100 (23 either way, async_copy and register_tiled)
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum",
    # sectors L1 read from L2 and L2 from DRAM: how often a tile is read again (the fix ideas
    # that move fewer bytes), which only the memory tables of `full` collect
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__sectors_read.sum",
)
CLOCK_CONTROLS: tuple[str, ...] = ("base", "none")
GRAPH_PROFILING: tuple[str, ...] = ("node", "graph")  # ncu's --graph-profiling
CaptureMode = Literal["nvtx", "kernel"]



@dataclass(frozen=True)
class NcuSettings:
    """What ncu collects and how it replays: identical for every entry of a run."""

    set: str | None = DEFAULT_SET
    sections: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    clock_control: str = "base"
    cache_control: str = "all"
    replay_mode: str = "kernel"
    # the CUDA sources the line info names, copied into the report: the pages show the code
    # around each hot instruction from the report itself (data, never run)
    import_source: bool = True
    source_folders: tuple[str, ...] = ()  # where ncu looks for sources named by relative paths
    # `pages` only: the overlay of ncu's sections (`harness.profile.section_overlay`), the
    # sections it slims and the metrics it thins out of SourceCounters; None runs ncu's stock
    # sections.
    section_folder: str | None = None
    slimmed_sections: tuple[str, ...] = ()
    thinned_metrics: tuple[str, ...] = ()
    rules_left_out: tuple[str, ...] = ()  # ncu's rules the overlay does not run
    overlay_note: str | None = None  # why `pages` runs on ncu's stock sections, when it does

    def __post_init__(self) -> None:
        if self.set is not None and self.set not in SETS:
            raise ValueError(f"unknown section set {self.set!r} (one of {', '.join(SETS)})")
        if self.clock_control not in CLOCK_CONTROLS:
            raise ValueError(f"unknown clock control {self.clock_control!r}")

    def args(self) -> list[str]:
        """The measurement options, in a fixed order."""
        argv = ["--config-file", "off"]
        if self.section_folder is not None:
            argv += ["--section-folder", self.section_folder]
        sections, metrics = list(self.sections), list(self.metrics)
        if self.set == "pages":
            # Not an ncu set: its sections; without --set, ncu collects only those named.
            sections = list(dict.fromkeys([*PAGES_SECTIONS, *sections]))
            metrics = list(dict.fromkeys([*PAGES_METRICS, *metrics]))
        elif self.set is not None:
            argv += ["--set", self.set]
        for section in sections:
            argv += ["--section", section]
        if metrics:
            argv += ["--metrics", ",".join(metrics)]
        argv += [
            "--clock-control", self.clock_control,
            "--cache-control", self.cache_control,
            "--replay-mode", self.replay_mode,
        ]
        if self.import_source:
            argv += ["--import-source", "yes"]
            if self.source_folders:
                argv += ["--source-folders", ",".join(self.source_folders)]
        return argv

    def manifest(self) -> dict[str, Any]:
        """The `ncu` block of manifest.json (command lines are added by the caller)."""
        return {
            "set": self.set,
            "sections": list(self.sections),
            "metrics": list(self.metrics),
            "clock_control": self.clock_control,
            "cache_control": self.cache_control,
            "replay_mode": self.replay_mode,
            "config_file": "off",
            "import_source": self.import_source,
            "source_folders": list(self.source_folders),
            "section_folder": self.section_folder,
            "slimmed_sections": list(self.slimmed_sections),
            "thinned_metrics": list(self.thinned_metrics),
            "rules_left_out": list(self.rules_left_out),
            "overlay_note": self.overlay_note,
        }


@dataclass(frozen=True)
class KernelFilter:
    """Which launches ncu profiles: any combination of ncu's own filters."""

    kernel: str | None = None  # passed to -k verbatim: a name, or "regex:..."
    launch_skip: int | None = None
    launch_count: int | None = None
    nvtx_include: tuple[str, ...] = field(default_factory=tuple)
    nvtx: bool = False  # record each launch's NVTX ranges (ncu --nvtx) without filtering by them
    # what -k matches: ncu's "function" (its default), "demangled" or "mangled"
    kernel_name_base: str | None = None
    devices: tuple[int, ...] = ()  # only launches on these devices (ncu's IDs)
    graph_profiling: str | None = None  # CUDA graphs: "node" (each kernel) or "graph"

    def args(self) -> list[str]:
        argv: list[str] = []
        if self.graph_profiling is not None:
            argv += ["--graph-profiling", self.graph_profiling]
        if self.devices:
            argv += ["--devices", ",".join(str(device) for device in self.devices)]
        if self.nvtx_include or self.nvtx:
            argv.append("--nvtx")
            for expression in self.nvtx_include:
                argv += ["--nvtx-include", expression]
        if self.kernel_name_base is not None:
            argv += ["--kernel-name-base", self.kernel_name_base]
        if self.kernel is not None:
            argv += ["-k", self.kernel]
        if self.launch_skip is not None:
            argv += ["--launch-skip", str(self.launch_skip)]
        if self.launch_count is not None:
            argv += ["--launch-count", str(self.launch_count)]
        return argv


def ncu_args(
    ncu: Path | str,
    settings: NcuSettings,
    kernel_filter: KernelFilter,
    report: Path | str,
    program: Sequence[str],
) -> list[str]:
    """The full argv: `ncu <settings> <filter> -o <report> -f <program...>`."""
    if not program:
        raise ValueError("ncu needs a program to run")
    return [
        str(ncu),
        *settings.args(),
        *kernel_filter.args(),
        "-o", str(report),
        "-f",
        *program,
    ]


def variant_filter(
    label: str, *, capture: CaptureMode, kernel_name: str, warmup: int
) -> KernelFilter:
    """The filter that captures exactly the runner's target run of entry `label`.

    `kernel_name` is a kernel's exact name, or a ready `-k` filter starting with "regex:"
    (a project variant's `capture`). With NVTX, every launch inside the range that matches it
    is captured: all passes of a multi-launch variant, none of a Python launcher's helper
    kernels. Counting (no NVTX) assumes one matching launch per run of the variant.
    """
    kernel = (kernel_name if kernel_name.startswith("regex:")
              else f"regex:^{re.escape(kernel_name)}$")
    if capture == "nvtx":
        return KernelFilter(nvtx_include=(f"{runner_range(label)}/",), kernel=kernel)
    return KernelFilter(kernel=kernel, launch_skip=warmup, launch_count=1)


def runner_program(
    variant: str,
    size: Sequence[int],
    *,
    label: str,
    project: Path | str | None = None,
    params: dict[str, Any] | None = None,
    warmup: int,
    capture: CaptureMode,
    python: str | None = None,
) -> list[str]:
    """argv of `python -m harness.gpu.runner` for one variant and size of a project."""
    argv = [python or sys.executable, "-m", "harness.gpu.runner"]
    if project is not None:
        argv += ["--project", str(project)]
    argv += [
        "--variant", variant,
        "--size", size_text(size),
        "--label", label,
        "--warmup", str(warmup),
        "--capture", capture,
    ]
    if params:
        argv += ["--params", json.dumps(params, sort_keys=True, separators=(",", ":"))]
    return argv


def version_args(ncu: Path | str) -> list[str]:
    return [str(ncu), "--version"]


def parse_version(output: str) -> str | None:
    """'Version 2025.3.1.0 (build ...)' -> '2025.3.1.0'; None when ncu printed no version."""
    match = re.search(r"Version\s+(\d+(?:\.\d+)+)", output)
    return match.group(1) if match else None
