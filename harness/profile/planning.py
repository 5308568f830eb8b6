"""What `ncuh profile` was asked, and the targets it will run: validated before anything starts.

`plan` checks variants and sizes (unknown variant, size a variant cannot take: exit 2) and
builds each target's exact ncu command line; `--dry-run` stops there, needing no GPU or ncu.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError
from harness.profile.launches import DURATION
from harness.profile.ncu_command import (
    CaptureMode,
    KernelFilter,
    NcuSettings,
    ncu_args,
    runner_program,
    variant_filter,
)
from harness.profile.nvtx_spans import spans_of

if TYPE_CHECKING:
    from harness.project import Project, Size

# A size as the command line gave it ("4096", "1024x2048x512"), or its values in dims order.
SizeWords = str | tuple[int, ...]

PROGRAM_LABEL = "program"
FIRST_PASS_LABEL = "ranking"  # the first pass of --top: ranking.ncu-rep, logs/ranking.log
# Launchers that start one process per GPU. ncu serializes the launches of every process it
# profiles, so a collective (NCCL) kernel would wait forever for its peers: the first pass of
# such a program leaves them out, unless the user's -k says otherwise.
MULTI_PROCESS_LAUNCHERS = re.compile(r"^(torchrun|mpirun|mpiexec|srun|deepspeed|accelerate)$")
NO_COLLECTIVES = "regex:^(?!nccl)"


@dataclass(frozen=True)
class ProfileRequest:
    """Everything `ncuh profile` was asked to do."""

    variants: tuple[str, ...] = ()
    sizes: tuple[SizeWords, ...] = ()  # default: the project's profile_size
    settings: NcuSettings = field(default_factory=NcuSettings)
    out: Path = Path("runs")
    params: dict[str, Any] = field(default_factory=dict)
    warmup: int = 3
    bench: bool = False
    bench_sizes: tuple[SizeWords, ...] = ()  # sizes to time with bench; default: the profiled ones
    all_variants: bool = False
    capture: str = "auto"  # "auto" (NVTX when CuPy has it) | "nvtx" | "kernel"
    program: tuple[str, ...] = ()  # a user program: profiled instead of variants
    program_filter: KernelFilter = field(default_factory=KernelFilter)
    project: Path | None = None  # the project file (None: found as harness.project says)
    gpus: str | None = None  # None: the default device; "all" or "0,1": one ncu per GPU at once
    allow_mismatch: bool = False  # --gpus may mix GPU models
    # metrics.csv is opt-in: the last report's export can only follow the last ncu, which
    # costs a short profile several percent; `ncuh export RUN` writes the same file later.
    metrics_csv: bool = False
    run_id: str | None = None  # the run directory's name; default: time and what was profiled
    # A program's N kernels with the most GPU time, each profiled at one launch
    # (`harness.profile.two_pass`); None: the program's launches as its filter says.
    top: int | None = None


@dataclass(frozen=True)
class Target:
    """One ncu invocation: a variant at one size, or the user's program."""

    label: str
    variant: str | None
    size: tuple[int, ...] | None
    params: dict[str, Any]
    program: tuple[str, ...]
    kernel_filter: KernelFilter
    # The ranked kernel this target profiles (--top): its process's key and its rank.
    ranked: tuple[str, int] | None = None

    @property
    def report_name(self) -> str:
        return f"{self.label}.ncu-rep"

    def argv(self, ncu: Path | str, settings: NcuSettings, run_dir: Path) -> list[str]:
        return ncu_args(ncu, settings, self.kernel_filter, run_dir / self.report_name,
                        self.program)


@dataclass(frozen=True)
class Plan:
    request: ProfileRequest
    targets: tuple[Target, ...]
    capture: CaptureMode
    # The project the targets come from (None for a user's program): loaded and checked once,
    # then read again by the manifest and --bench instead of being looked up anew.
    project: Project | None = None
    # --top: the pass that times every launch; the targets come from its ranking.
    first_pass: Target | None = None

    def command_lines(self, ncu: Path | str, run_dir: Path) -> list[list[str]]:
        first = ([self.first_pass.argv(ncu, first_pass_settings(self.request.settings),
                                       run_dir)] if self.first_pass is not None else [])
        return first + [t.argv(ncu, self.request.settings, run_dir) for t in self.targets]


def first_pass_settings(settings: NcuSettings) -> NcuSettings:
    """What the first pass collects: each launch's duration and nothing else (one pass, no
    replay), at the run's clock control; caches are not flushed, so that each kernel meets
    the caches the program leaves it, as when it runs alone. No source is imported: the
    ranking shows none, and a program's first pass holds every launch."""
    return NcuSettings(set=None, metrics=(DURATION,), clock_control=settings.clock_control,
                       cache_control="none", replay_mode="kernel", import_source=False)


def first_pass_filter(request: ProfileRequest) -> KernelFilter:
    """The user's filters for the first pass. --launch-skip is not ncu's there: every launch
    is timed, so that the second pass can count to a kernel's launch, and the ranking skips
    them itself; --launch-count ends the pass after the ranked window. Plain push/pop NVTX
    ranges are ncuh's to span over every thread (`nvtx_spans`): the pass records every
    launch's ranges instead of leaving launches out."""
    given = request.program_filter
    spans = spans_of(given.nvtx_include)
    count = (given.launch_count + (given.launch_skip or 0)
             if given.launch_count is not None and not spans else None)
    kernel = given.kernel
    if kernel is None and _multi_process(request.program):
        kernel = NO_COLLECTIVES
    return KernelFilter(kernel=kernel, launch_count=count,
                        nvtx_include=() if spans else given.nvtx_include, nvtx=bool(spans),
                        kernel_name_base=given.kernel_name_base, devices=given.devices,
                        graph_profiling=given.graph_profiling or "node")


def _multi_process(program: Sequence[str]) -> bool:
    words = [Path(word).name for word in program[:3]]
    return any(MULTI_PROCESS_LAUNCHERS.match(word) for word in words) or (
        "torch.distributed.run" in program[:4])


def size_of(project: Project, size: SizeWords) -> Size:
    return project.parse_size(size) if isinstance(size, str) else project.size(size)


def plan(request: ProfileRequest, *, capture: CaptureMode = "nvtx") -> Plan:
    """Validate the request and build every target; raises exit-2 errors before any work."""
    if request.program:
        if request.variants or request.all_variants:
            raise NcuhError("give either --variant/--all or a program after --, not both")
        if request.top is not None:  # the targets come from the first pass's ranking
            first = Target(label=FIRST_PASS_LABEL, variant=None, size=None, params={},
                           program=tuple(request.program),
                           kernel_filter=first_pass_filter(request))
            return Plan(request, (), capture, first_pass=first)
        target = Target(
            label=PROGRAM_LABEL, variant=None, size=None, params={},
            program=tuple(request.program), kernel_filter=request.program_filter,
        )
        return Plan(request, (target,), capture)

    if request.top is not None:
        raise NcuhError("--top ranks the kernels of a program: give one after --")
    from harness.project import open_project  # pydantic: after ncu's start on a kept plan

    project = open_project(request.project)
    if request.settings.import_source:  # the kernels' #line names are relative to the project
        request = dataclasses.replace(request, settings=dataclasses.replace(
            request.settings, source_folders=(str(project.folder),)))
    names = project.names if request.all_variants else list(request.variants)
    if not names:
        raise NcuhError("nothing to profile: give --variant NAME, --all, or -- COMMAND ARGS")
    sizes = list(dict.fromkeys(size_of(project, s) for s in request.sizes)) \
        or [project.profile_size]
    for size in request.bench_sizes:  # a bad --bench-sizes is refused before ncu runs
        size_of(project, size)
    targets = []
    for name in dict.fromkeys(names):
        variant = project.variant(name)  # UnknownVariantError lists the names
        for size in sizes:
            # Bad parameters (NcuhError) or a size it cannot take (UnsupportedShapeError): exit 2.
            params = project.check_params(variant, request.params or None, size)
            label = f"{variant.name}_{size.label}"
            program = runner_program(
                variant.name, size, label=label, params=request.params,
                warmup=request.warmup, capture=capture, project=project.path,
            )
            targets.append(Target(
                label=label, variant=variant.name, size=tuple(size), params=params,
                program=tuple(program),
                kernel_filter=variant_filter(
                    label, capture=capture, kernel_name=variant.capture_filter,
                    warmup=request.warmup,
                ),
            ))
    return Plan(request, tuple(targets), capture, project)


def run_id_for(request: ProfileRequest, now: datetime | None = None) -> str:
    """`20261121-235959-register_tiled`: sortable time, then what was profiled."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    if request.program:
        what = _program_name(request.program)
    elif request.all_variants:
        what = "all"
    elif len(request.variants) == 1:
        what = request.variants[0]
    else:
        what = f"{request.variants[0]}-and-{len(request.variants) - 1}-more"
    return f"{stamp}-{what}"


_LAUNCHERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|sh|bash|env|torchrun|uv|uvx|time)$")


def _program_name(program: Sequence[str]) -> str:
    """`python my_kernel.py --n 4` -> `my_kernel`: the first word that is not a launcher."""
    words = [Path(word).name for word in program if word and not word.startswith("-")]
    chosen = next((w for w in words if not _LAUNCHERS.match(w)), words[0] if words else "")
    stem = chosen.rsplit(".", 1)[0] if chosen.endswith((".py", ".sh")) else chosen
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or PROGRAM_LABEL


def resolve_capture(request: ProfileRequest) -> CaptureMode:
    # `auto` is NVTX: CuPy is built with NVTX wherever it runs, and asking whether it is would
    # mean importing CuPy (a second or more) before ncu. Where it is not, the runner says to
    # pass --capture kernel.
    if request.capture in ("nvtx", "kernel"):
        return request.capture  # type: ignore[return-value]
    return "nvtx"
