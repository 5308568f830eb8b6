"""`ncuh profile --top N -- PROGRAM`: time every launch, rank, then profile the top N.

The first pass runs the program under ncu collecting one metric, each launch's duration
(`planning.first_pass_settings`), into `ranking.ncu-rep`; ncu prints it back as its raw CSV
page (`launches`), with demangled and with mangled names, which `ranking` turns into one
ranking per process. The second pass is one ncu per ranked kernel, each at its representative
launch: `--kernel-name-base mangled -k <mangled name> --launch-skip <launches of that name
before it> --launch-count 1`, and `--devices` where several processes ran (one per GPU). A
plain push/pop NVTX range is spanned by ncuh over every thread (`nvtx_spans`), and launches
are counted from the program's start; any other NVTX expression is ncu's filter in both
passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import NcuhError
from harness.profile.entry import profile_target
from harness.profile.launches import (
    DURATION,
    Launch,
    LaunchTableError,
    NameBase,
    export_argv,
    read_launches,
    with_mangled,
)
from harness.profile.ncu_command import KernelFilter
from harness.profile.nvtx_spans import spans_of
from harness.profile.planning import Plan, ProfileRequest, Target, first_pass_settings
from harness.profile.processes import Runner
from harness.profile.progress import ProgressDisplay
from harness.profile.ranking import Ranking, Window, rank_launches
from harness.rundir import short_name

LABEL_NAME_WIDTH = 48  # of a kernel's short name in its report's file name
_NAMES: tuple[NameBase, ...] = ("demangled", "mangled")  # the two exports of the first pass


@dataclass(frozen=True)
class FirstPass:
    """What the first pass found and how it ran."""

    ranking: Ranking
    top: int
    seconds: float  # the program under ncu, from start to the report
    report: str  # the first pass's report, inside the run directory
    settings: dict[str, Any] = field(default_factory=dict)  # its ncu settings
    nvtx_include: tuple[str, ...] = ()  # the user's NVTX expressions

    def manifest(self, ncu: Path, run_dir: Path) -> dict[str, Any]:
        """The manifest's `ranking` block (its command lines name `run_dir`, the run
        directory's final name); the first pass's own ncu command line leads the manifest's
        `ncu.command_lines`."""
        return {
            "metric": DURATION,
            "top": self.top,
            "report": self.report,
            "seconds": round(self.seconds, 3),
            "export_command_lines": [export_argv(ncu, run_dir / self.report, names)
                                     for names in _NAMES],
            "ncu": self.settings,
            "window": {"launch_skip": self.ranking.window.skip,
                       "launch_count": self.ranking.window.count,
                       "nvtx_include": list(self.nvtx_include),
                       # "every thread": ncuh spanned the push/pop ranges over the process's
                       # threads (nvtx_spans); "ncu": ncu's own filter took the launches
                       "nvtx_over": ("every thread" if spans_of(self.nvtx_include)
                                     else "ncu" if self.nvtx_include else None)},
            "launches_seen": self.ranking.launches_seen,
            "processes": [process.manifest() for process in self.ranking.processes],
        }


def _label(key: str | None, rank: int, name: str) -> str:
    """`03-gemm_kernel` (`gpu1-03-gemm_kernel` where several processes ran): the report's
    name, unique within the run."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", short_name(name, LABEL_NAME_WIDTH)).strip("_.")
    prefix = f"{key}-" if key else ""
    return f"{prefix}{rank:02d}-{stem or 'kernel'}"


def top_targets(ranking: Ranking, request: ProfileRequest) -> tuple[Target, ...]:
    """One target per ranked kernel among the top N of each process: its representative
    launch, found again by name and by how many launches of that name came before it."""
    assert request.top is not None
    given = request.program_filter
    # spans read by ncuh count from the program's start: the second pass filters by name alone
    nvtx = () if spans_of(given.nvtx_include) else given.nvtx_include
    several = len(ranking.processes) > 1
    targets = []
    for process in ranking.processes:
        for kernel in process.kernels[:request.top]:
            devices = (process.device,) if several and process.device is not None else ()
            targets.append(Target(
                label=_label(process.key if several else None, kernel.rank, kernel.name),
                variant=None, size=None, params={}, program=tuple(request.program),
                kernel_filter=KernelFilter(
                    kernel=kernel.mangled or kernel.name,
                    kernel_name_base="mangled" if kernel.mangled else "demangled",
                    launch_skip=kernel.representative_skip, launch_count=1,
                    nvtx_include=nvtx, devices=devices or given.devices,
                    graph_profiling=given.graph_profiling or "node"),
                ranked=(process.key, kernel.rank)))
    return tuple(targets)


def _export(ncu: Path, report: Path, runner: Runner, names: NameBase) -> list[Launch]:
    """The first pass's launches as ncu prints them back, with `names`."""
    argv = export_argv(ncu, report, names)
    status, output = runner(argv, None)
    if status != 0:
        said = next((line.strip() for line in reversed(output.splitlines()) if line.strip()),
                    "nothing")
        raise NcuhError(f"ncu could not read the first pass's report back (status {status}): "
                        f"{said}")
    try:
        return read_launches(output)
    except LaunchTableError as error:
        raise NcuhError(f"{error} (from {' '.join(argv[:2])} --import ...)") from None


def _launches(ncu: Path, report: Path, runner: Runner) -> list[Launch]:
    """Every launch of the first pass, named as ncu prints them and mangled."""
    demangled, mangled = (_export(ncu, report, runner, names) for names in _NAMES)
    try:
        return with_mangled(demangled, mangled)
    except LaunchTableError as error:
        raise NcuhError(str(error)) from None


def run_first_pass(plan_: Plan, ncu: Path, run_dir: Path, runner: Runner,
                   on_start: Callable[[], None] | None = None,
                   progress: ProgressDisplay | None = None) -> FirstPass:
    """Time every launch of the program, read the launches back through ncu and rank them;
    `NcuhError` (exit 2) when the program or ncu fails, or no launch was timed."""
    target, request = plan_.first_pass, plan_.request
    assert target is not None and request.top is not None
    settings = first_pass_settings(request.settings)
    if progress is not None:
        progress.start(target.label, 0, 1)
    entry = profile_target(target, ncu, settings, run_dir, runner, on_start=on_start,
                           on_output=(lambda text: progress.output(target.label, text))
                           if progress is not None else None)
    if progress is not None:
        progress.finish(target.label, entry.status, entry.seconds, None, entry.error)
        progress.count_anew()
    if entry.status != "ok":
        raise NcuhError(f"the first pass (every launch's duration) failed: {entry.error}")
    launches = _launches(ncu, run_dir / target.report_name, runner)
    given = request.program_filter
    ranking = rank_launches(launches, Window(given.launch_skip or 0, given.launch_count),
                            spans_of(given.nvtx_include) or ())
    if not ranking.processes:
        spans = spans_of(given.nvtx_include)
        if spans and launches:
            raise NcuhError(f"none of the first pass's {len(launches)} launches was made inside "
                            f"the NVTX range {' or '.join(given.nvtx_include)} (check "
                            "--nvtx-include: a push/pop range is RANGE/, DOMAIN@RANGE/)")
        raise NcuhError("the first pass timed no launch in the ranked window (check the "
                        "kernel and NVTX filters, --launch-skip and --launch-count)")
    return FirstPass(ranking=ranking, top=request.top, seconds=entry.seconds,
                     report=target.report_name, settings=settings.manifest(),
                     nvtx_include=given.nvtx_include)
