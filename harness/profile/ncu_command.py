"""Build `ncu` command lines as argument lists (never shell strings).

Everything that changes what ncu measures is pinned here and recorded in the manifest:
`--config-file off` (a user's config.ncu-cfg must not leak into a run), `--clock-control`
(default `base`: clocks locked to base so runs on different days compare), `--cache-control
all` (caches flushed before every replay pass) and `--replay-mode kernel`.

Two kinds of target:

* a bundled variant, run by `python -m harness.runner`, which launches the kernel once inside
  the NVTX push/pop range `runner_range(label)`; ncu captures that launch alone through
  `--nvtx --nvtx-include "<range>/"` (the trailing slash selects push/pop ranges) with
  `--launch-count 1`. Where NVTX is unavailable the runner launches the kernel exactly
  `warmup` times before the target launch and ncu skips them by count instead
  (`-k regex:^<kernel>$ --launch-skip <warmup> --launch-count 1`);
* a user program (`ncuh profile -- COMMAND ARGS`), filtered by whatever the user passes:
  `-k/--kernel`, `--launch-skip`, `--launch-count`, `--nvtx-include`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SETS: tuple[str, ...] = ("full", "detailed", "basic")
CLOCK_CONTROLS: tuple[str, ...] = ("base", "none")
CaptureMode = Literal["nvtx", "kernel"]

# Prefix of the NVTX range the runner pushes around the one launch ncu must capture.
RANGE_PREFIX = "ncuh-"


def runner_range(label: str) -> str:
    """Name of the NVTX push/pop range around the profiled launch of entry `label`."""
    return f"{RANGE_PREFIX}{label}"


@dataclass(frozen=True)
class NcuSettings:
    """What ncu collects and how it replays: identical for every entry of a run."""

    set: str | None = "full"
    sections: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    clock_control: str = "base"
    cache_control: str = "all"
    replay_mode: str = "kernel"
    import_source: bool = False

    def __post_init__(self) -> None:
        if self.set is not None and self.set not in SETS:
            raise ValueError(f"unknown section set {self.set!r} (one of {', '.join(SETS)})")
        if self.clock_control not in CLOCK_CONTROLS:
            raise ValueError(f"unknown clock control {self.clock_control!r}")

    def args(self) -> list[str]:
        """The measurement options, in a fixed order."""
        argv = ["--config-file", "off"]
        if self.set is not None:
            argv += ["--set", self.set]
        for section in self.sections:
            argv += ["--section", section]
        if self.metrics:
            argv += ["--metrics", ",".join(self.metrics)]
        argv += [
            "--clock-control", self.clock_control,
            "--cache-control", self.cache_control,
            "--replay-mode", self.replay_mode,
        ]
        if self.import_source:
            argv += ["--import-source", "yes"]
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
        }


@dataclass(frozen=True)
class KernelFilter:
    """Which launches ncu profiles: any combination of ncu's own filters."""

    kernel: str | None = None  # passed to -k verbatim: a name, or "regex:..."
    launch_skip: int | None = None
    launch_count: int | None = None
    nvtx_include: tuple[str, ...] = field(default_factory=tuple)

    def args(self) -> list[str]:
        argv: list[str] = []
        if self.nvtx_include:
            argv.append("--nvtx")
            for expression in self.nvtx_include:
                argv += ["--nvtx-include", expression]
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
    """The filter that captures exactly the runner's target launch of entry `label`."""
    if capture == "nvtx":
        return KernelFilter(nvtx_include=(f"{runner_range(label)}/",), launch_count=1)
    return KernelFilter(
        kernel=f"regex:^{re.escape(kernel_name)}$", launch_skip=warmup, launch_count=1
    )


def runner_program(
    variant: str,
    size: tuple[int, int, int],
    *,
    label: str,
    params: dict[str, Any] | None = None,
    warmup: int,
    capture: CaptureMode,
    python: str | None = None,
) -> list[str]:
    """argv of `python -m harness.runner` for one variant and size."""
    argv = [
        python or sys.executable, "-m", "harness.runner",
        "--variant", variant,
        "--size", ",".join(str(n) for n in size),
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
