"""`ncuh profile` as a library: run each variant (or a user program) under ncu into a run directory.

    request = ProfileRequest(variants=("register_tiled",), sizes=((4096, 4096, 4096),))
    outcome = run_profile(request)          # -> ProfileOutcome (run_dir, entries, exit_code)

Order of work, so that every cheap check fails before anything expensive starts:
1. `plan`: variants and sizes validated (unknown variant, size a variant cannot take: exit 2)
   and the exact ncu command lines built; `--dry-run` stops here, no GPU or ncu needed. Where
   the same request's plan checked before (`plan_cache`), ncu starts on it first and the
   project is checked beside the first ncu instead (then a missing ncu or CuPy is said before
   a project that no longer checks);
2. cheap checks in this process only: ncu located (`NcuNotFoundError` says how to get it)
   and, for bundled variants, CuPy installed (found, not imported: CUDA never loads here).
   Capture `auto` means NVTX; a CuPy without NVTX makes the runner fail with one line saying
   to pass `--capture kernel`. Nothing slow runs before ncu: a machine without a GPU is found
   out by the first ncu run itself (the runner exits 3, or ncu says so), which is fatal;
3. the run directory built under a temporary `.incomplete` name (`harness.util.atomic`): one ncu
   subprocess per entry, in its own process group so an interrupt kills ncu and the runner
   together, handed out by `schedule.run_queue` (one at a time, or with `--gpus` one ncu per
   GPU at once); a failure of the machine (no counter permission, no GPU) stops everything
   with exit 2 and leaves no directory, a failure of one entry is recorded and the walk
   carries on (exit 1 at the end);
4. post-processing beside ncu (`post.PostProcessing`), started once ncu has started, never
   before it: the environment probe (and the git commit) beside the first ncu and, with
   `--metrics-csv`, each report's export to metrics.csv beside its own ncu (it goes when the
   report is written). Children
   because CuPy and `ncu_report` are native code: a crash in either costs its own part,
   recorded in the manifest. Then `bench.json` with `--bench`, and `manifest.json` last (with
   phase timings); then the directory is renamed into place.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import itertools
import json
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness import __version__, util
from harness.errors import NcuhError, NcuNotFoundError, NoGpuError
from harness.gpu import RESULT_PREFIX
from harness.profile import plan_cache, processes
from harness.profile.gpus import Gpu, gpu_for_bus_id, list_gpus, pinned_environment, select_gpus
from harness.profile.head_start import (
    HEAD_START_REPLAY_MODES,
    EarlyStart,
    FreshStartClock,
    HeadStarts,
    NcuOutputWatch,
    head_start_wanted,
)
from harness.profile.ncu_command import (
    CaptureMode,
    KernelFilter,
    NcuSettings,
    ncu_args,
    runner_program,
    variant_filter,
)
from harness.profile.past_runs import previous_entries, typical_start, with_own_starts
from harness.profile.phases import PhaseClock
from harness.profile.post import PostProcessing
from harness.profile.processes import (
    Runner,
    Spawner,
    in_threads,
    package_environment,
    result_line,
    run_command,
    start_command,
    terminate_as_interrupt,
)
from harness.profile.progress import ProgressDisplay, passes_in
from harness.profile.schedule import (
    DEFAULT_SLOTS,
    Slot,
    TakingRule,
    Upcoming,
    longest_first,
    plan_slots,
    run_queue,
)
from harness.rundir import BENCH, MANIFEST, RUN_SCHEMA
from harness.util import atomic_directory, atomic_write_text

if TYPE_CHECKING:
    from harness.project import Project, Size

# A size as the command line gave it ("4096", "1024x2048x512"), or its values in dims order.
SizeWords = str | tuple[int, ...]

NCU_HELP = (
    "ncu (Nsight Compute) was not found on PATH, in $NCU_HOME or under "
    "/opt/nvidia/nsight-compute: install it with the CUDA Toolkit or from "
    "https://developer.nvidia.com/nsight-compute, then put its directory on PATH"
)
PROGRAM_LABEL = "program"
NO_CUPY_HELP = "no GPU: CuPy is not installed (pip install 'ncuh[cuda13]' or 'ncuh[cuda12]')"


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


@dataclass(frozen=True)
class Target:
    """One ncu invocation: a variant at one size, or the user's program."""

    label: str
    variant: str | None
    size: tuple[int, ...] | None
    params: dict[str, Any]
    program: tuple[str, ...]
    kernel_filter: KernelFilter

    @property
    def report_name(self) -> str:
        return f"{self.label}.ncu-rep"

    def argv(self, ncu: Path | str, settings: NcuSettings, run_dir: Path) -> list[str]:
        return ncu_args(ncu, settings, self.kernel_filter, run_dir / self.report_name,
                        self.program)


@dataclass
class EntryResult:
    """What happened to one target; becomes one entry of manifest.json."""

    target: Target
    status: Literal["ok", "failed"]
    error: str | None = None
    seconds: float = 0.0
    kernel_name: str | None = None
    rel_error: float | None = None
    params: dict[str, Any] | None = None  # as the runner compiled them (None: as planned)
    # The runner's CuPy view of the device and CUDA; empty for a user's program.
    environment: dict[str, Any] = field(default_factory=dict)
    passes: int | None = None  # ncu's replay passes for the kernel, as it printed them
    gpu: dict[str, Any] | None = None  # which GPU profiled it (index, name, uuid, pci_bus_id)
    # How long its ncu ran before its turn (`harness.profile.head_start`); None: started on time.
    head_start_s: float | None = None
    # Where it paid its own start (no head start): seconds from its ncu's start to its first
    # replay pass, part of `seconds`. `--gpus` plans without it (`history.PastEntry.work_s`).
    start_s: float | None = None
    # Where `seconds` went: to the first replay pass, the passes, the report
    # (`harness.profile.phases`); None where ncu's output did not show them.
    phases: dict[str, float] | None = None

    @property
    def label(self) -> str:
        return self.target.label

    @property
    def report_name(self) -> str:
        return self.target.report_name

    def manifest(self) -> dict[str, Any]:
        target = self.target
        return {
            "label": target.label,
            "variant": target.variant,
            "size": list(target.size) if target.size else None,
            "params": self.params if self.params is not None else target.params,
            "report": target.report_name if self.status == "ok" else None,
            "status": self.status,
            "error": self.error,
            "kernel_name": self.kernel_name,
            "rel_error": self.rel_error,
            "seconds": round(self.seconds, 3),
            "passes": self.passes,
            "gpu": self.gpu,
            "head_start_s": (round(self.head_start_s, 3) if self.head_start_s is not None
                             else None),
            "start_s": round(self.start_s, 3) if self.start_s is not None else None,
            "phases": self.phases,
        }


@dataclass
class ProfileOutcome:
    run_id: str
    run_dir: Path
    entries: list[EntryResult]
    metrics_error: str | None = None  # metrics.csv could not be made (the reports are there)
    overlay_note: str | None = None  # why `pages` ran on ncu's stock sections, when it did

    @property
    def failures(self) -> list[EntryResult]:
        return [entry for entry in self.entries if entry.status != "ok"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures or self.metrics_error else 0


@dataclass(frozen=True)
class Plan:
    request: ProfileRequest
    targets: tuple[Target, ...]
    capture: CaptureMode
    # The project the targets come from (None for a user's program): loaded and checked once,
    # then read again by the manifest and --bench instead of being looked up anew.
    project: Project | None = None

    def command_lines(self, ncu: Path | str, run_dir: Path) -> list[list[str]]:
        return [t.argv(ncu, self.request.settings, run_dir) for t in self.targets]


# ---------------------------------------------------------------- planning (no GPU, no ncu)


def _size(project: Project, size: SizeWords) -> Size:
    return project.parse_size(size) if isinstance(size, str) else project.size(size)


def plan(request: ProfileRequest, *, capture: CaptureMode = "nvtx") -> Plan:
    """Validate the request and build every target; raises exit-2 errors before any work."""
    if request.program:
        if request.variants or request.all_variants:
            raise NcuhError("give either --variant/--all or a program after --, not both")
        target = Target(
            label=PROGRAM_LABEL, variant=None, size=None, params={},
            program=tuple(request.program), kernel_filter=request.program_filter,
        )
        return Plan(request, (target,), capture)

    from harness.project import open_project  # pydantic: after ncu's start on a kept plan

    project = open_project(request.project)
    names = project.names if request.all_variants else list(request.variants)
    if not names:
        raise NcuhError("nothing to profile: give --variant NAME, --all, or -- COMMAND ARGS")
    sizes = list(dict.fromkeys(_size(project, s) for s in request.sizes)) \
        or [project.profile_size]
    for size in request.bench_sizes:  # a bad --bench-sizes is refused before ncu runs
        _size(project, size)
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


# ---------------------------------------------------------------- running ncu


def check_program(program: Sequence[str]) -> None:
    """`NcuhError` (one line) unless the program after `--` exists and may be run: found
    before ncu starts, not as an ncu failure after it."""
    name = program[0]
    if os.sep in name or (os.altsep and os.altsep in name):
        path = Path(name)
        try:
            info = path.stat()
        except FileNotFoundError:
            raise NcuhError(f"program not found: {name}") from None
        except OSError as error:
            raise NcuhError(f"cannot run {name}: {error.strerror or error}") from None
        if stat.S_ISDIR(info.st_mode):
            raise NcuhError(f"cannot run {name}: it is a directory")
        if not stat.S_ISREG(info.st_mode) or not os.access(path, os.X_OK):
            raise NcuhError(f"cannot run {name}: not an executable file "
                            f"(chmod +x it, or name its interpreter: -- python {name})")
    elif shutil.which(name) is None:
        raise NcuhError(f"program not found: {name} (not on PATH)")


def with_section_overlay(settings: NcuSettings, ncu: Path | str) -> NcuSettings:
    """`pages` with its slimmed and thinned section folder (`harness.profile.section_overlay`)
    where one can be built for this ncu; every other set, and a folder already chosen, as
    given."""
    if settings.set != "pages" or settings.section_folder is not None:
        return settings
    from harness.profile.section_overlay import pages_overlay

    result = pages_overlay(ncu, sections=settings.sections)
    if result.overlay is None:  # `pages` on ncu's stock sections; the manifest says why
        return dataclasses.replace(settings, overlay_note=result.reason)
    return dataclasses.replace(settings, section_folder=str(result.overlay.folder),
                               slimmed_sections=result.overlay.slimmed,
                               thinned_metrics=result.overlay.thinned,
                               rules_left_out=result.overlay.rules_left_out)


def find_ncu() -> Path:
    ncu = util.ncu_executable()  # looked up per call: tests stand in an ncu
    if ncu is None:
        raise NcuNotFoundError(NCU_HELP)
    return ncu


def runner_environment() -> dict[str, str]:
    """Our environment, with this ncuh's package root first on PYTHONPATH.

    `python -m harness.gpu.runner` under ncu must import the same `harness` as this process, also
    from a checkout that is not installed or when PYTHONPATH was given as a relative path.
    """
    return package_environment()


def _runner_result(output: str) -> dict[str, Any]:
    return result_line(output, RESULT_PREFIX) or {}


def target_environment(target: Target, gpu: Gpu | None = None) -> dict[str, str] | None:
    """The environment of a target's ncu: ours with this ncuh's package root on PYTHONPATH for
    our runner (a user's program keeps its own), pinned to `gpu` when given; None: ours."""
    env = runner_environment() if target.variant is not None else None
    if gpu is not None:
        env = pinned_environment(env or dict(os.environ), gpu)
    return env


def profile_target(
    target: Target, ncu: Path, settings: NcuSettings, run_dir: Path,
    runner: Runner = run_command, *, gpu: Gpu | None = None,
    on_output: Callable[[str], None] | None = None,
    on_start: Callable[[], None] | None = None,
    early: EarlyStart | None = None,
    on_output_at: Callable[[str, float], None] | None = None,
) -> EntryResult:
    """Run ncu for one target (pinned to `gpu` when given); raise the exit-2 error when the
    machine cannot profile. `on_output` sees ncu's output as it comes (its pass progress),
    `on_output_at` the same with the time each piece came; `on_start` is called once ncu has
    started (the runner must take it: `run_command`). `early`: the target's ncu, already
    started before its turn (its gates now open)."""
    report = run_dir / target.report_name
    started = time.monotonic()
    # ncuh's own runner profiles one launch in one process: its disconnection ends the passes
    clock = (PhaseClock(started) if target.variant is not None
             and settings.replay_mode in HEAD_START_REPLAY_MODES else None)

    def output_at(text: str, at: float) -> None:
        if clock is not None:
            clock.feed(text, at)
        if on_output_at is not None:
            on_output_at(text, at)

    timed = output_at if clock is not None or on_output_at is not None else None
    if early is not None:
        if on_start is not None:
            try:
                on_start()
            except BaseException:  # an interrupt, say: this ncu is no longer anyone's to kill
                early.command.kill()
                raise
        # what it printed before its turn is timed as it came, not as it is handed over
        returncode, output = early.command.wait(on_output, timed)
    else:
        argv = target.argv(ncu, settings, run_dir)
        env = target_environment(target, gpu)
        keywords: dict[str, Any] = {}
        if on_start is not None:
            keywords["on_start"] = on_start
        if timed is not None:
            keywords["on_output_at"] = timed
        returncode, output = runner(argv, env, on_output, **keywords)
    ended = time.monotonic()
    seconds = ended - started
    phases = clock.phases(ended) if clock is not None else None
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)
    atomic_write_text(logs / f"{target.label}.log", output)
    from harness.profile.ncu_errors import classify  # imported beside the first ncu

    failure = classify(output, returncode, report_written=report.is_file())
    where = gpu.manifest() if gpu is not None else None
    head_start_s = started - early.started if early is not None else None
    if failure is not None:
        if failure.fatal:
            raise failure.error()
        report.unlink(missing_ok=True)
        return EntryResult(target, "failed", failure.message, seconds, gpu=where,
                           head_start_s=head_start_s)
    result = _runner_result(output)
    return EntryResult(
        target, "ok", None, seconds,
        kernel_name=result.get("kernel_name"), rel_error=result.get("rel_error"),
        params=result.get("params"), environment=result.get("environment") or {},
        passes=passes_in(output), gpu=where, head_start_s=head_start_s, phases=phases,
    )


# ---------------------------------------------------------------- the run directory


def cupy_installed() -> bool:
    """Whether CuPy can be imported, without importing it (that would load CUDA here)."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):  # a broken or half-imported package
        return False



def _iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_manifest(
    plan_: Plan, entries: Sequence[EntryResult], *, environment: dict[str, Any], ncu: Path,
    run_dir: Path, started_at: str, finished_at: str, metrics: dict[str, Any] | None,
    bench: bool, commit: str | None, timings: dict[str, float] | None = None,
    head_start: bool = False,
) -> dict[str, Any]:
    request = plan_.request
    return {
        "schema": RUN_SCHEMA,
        "ncuh_version": __version__,
        "git_commit": commit,
        "environment": environment,
        "ncu": {
            **request.settings.manifest(),
            "executable": str(ncu),
            "capture": plan_.capture if not request.program else "user",
            "command_lines": plan_.command_lines(ncu, run_dir),
            "head_start": head_start,  # each next target's ncu started early (head_start.py)
        },
        "variants": list(dict.fromkeys(t.variant for t in plan_.targets if t.variant)),
        "sizes": [list(s) for s in dict.fromkeys(t.size for t in plan_.targets if t.size)],
        "params": dict(request.params),
        "warmup": request.warmup,
        "program": list(request.program) or None,
        "started_at": started_at,
        "finished_at": finished_at,
        "entries": [entry.manifest() for entry in entries],
        "gpus": _gpus_used(entries),
        "metrics": metrics,
        "bench": BENCH if bench else None,
        "timings": timings,
        # Optional: which project the variants came from (writeup reads strategies from it).
        "project": plan_.project.manifest() if plan_.project is not None else None,
    }


def _gpus_used(entries: Sequence[EntryResult]) -> list[dict[str, Any]]:
    """Each GPU that profiled an entry, once, in the order first used."""
    seen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.gpu:
            seen.setdefault(json.dumps(entry.gpu, sort_keys=True), entry.gpu)
    return list(seen.values())


def _resolve_capture(request: ProfileRequest) -> CaptureMode:
    # `auto` is NVTX: CuPy is built with NVTX wherever it runs, and asking whether it is would
    # mean importing CuPy (a second or more) before ncu. Where it is not, the runner says to
    # pass --capture kernel.
    if request.capture in ("nvtx", "kernel"):
        return request.capture  # type: ignore[return-value]
    return "nvtx"


def _unique_run_dir(out: Path, run_id: str) -> tuple[str, Path]:
    candidate, n = run_id, 1
    while (out / candidate).exists() or any(out.glob(f".{candidate}.*.incomplete")):
        n += 1
        candidate = f"{run_id}-{n}"
    return candidate, out / candidate


def run_profile(
    request: ProfileRequest,
    *,
    on_start: Callable[[Target, int, int], None] | None = None,
    on_done: Callable[[EntryResult, int, int], None] | None = None,
    progress: ProgressDisplay | None = None,
    runner: Runner | None = None,
    spawner: Spawner | None = None,
) -> ProfileOutcome:
    """Profile every target of `request` into a new run directory under `request.out`.

    `runner` runs one argv and returns (status, output); `spawner` starts one and returns a
    `Job`. Tests replace them; the defaults are `run_command` and `start_command` (looked up
    at call time so that they can be patched). Given only a `runner`, the post-processing
    jobs go through it, on threads (started just before ncu: such a runner cannot say when
    ncu has started). `progress` shows ncu's pass progress as it comes.
    """
    hooks = {"on_start": on_start, "on_done": on_done, "progress": progress,
             "runner": runner, "spawner": spawner}
    try:
        return _run_profile(request, **hooks)
    except plan_cache.StalePlan as stale:
        # The project gives other targets than the plan kept for it: start again on the plan
        # the check made (and keep that one).
        return _run_profile(request, checked=stale.checked, **hooks)


@dataclass(frozen=True)
class _KeptPlanSource:
    """Where a request's kept plan lives: its key and the project file it was made from."""

    key: str
    project_file: Path


def _kept_plan_source(request: ProfileRequest, capture: CaptureMode) -> _KeptPlanSource | None:
    """The key of a project's request (read before anything else reads the project file);
    None for a user's program, with the cache off, or where the file cannot be found."""
    if request.program or not plan_cache.wanted():
        return None
    from harness.errors import ProjectError
    from harness.project import find_project

    try:
        project_file = find_project(request.project)
    except (ProjectError, OSError):
        return None  # the plan says why
    key = plan_cache.plan_key(request, capture, project_file)
    return _KeptPlanSource(key, project_file) if key is not None else None


def _kept_plan_check(request: ProfileRequest, capture: CaptureMode,
                     source: _KeptPlanSource) -> plan_cache.PlanCheck | None:
    """The check to run beside the first ncu, where this request's plan was kept before."""
    kept = plan_cache.load(source.key, request, capture, source.project_file)
    if kept is None:
        return None
    return plan_cache.PlanCheck(lambda: plan(request, capture=capture), kept, source.key)


def _run_profile(
    request: ProfileRequest,
    *,
    checked: Plan | None = None,
    on_start: Callable[[Target, int, int], None] | None,
    on_done: Callable[[EntryResult, int, int], None] | None,
    progress: ProgressDisplay | None,
    runner: Runner | None,
    spawner: Spawner | None,
) -> ProfileOutcome:
    clock = time.monotonic()
    if runner is None:
        runner, spawner = run_command, spawner or start_command
    else:
        spawner = spawner or in_threads(runner)
        runner = _starting_first(runner)
    capture = _resolve_capture(request)
    # Names and sizes are checked before ncu starts, unless this request's plan checked before:
    # then the project is checked beside the first ncu (`harness.profile.plan_cache`).
    source = _kept_plan_source(request, capture)
    check = (_kept_plan_check(request, capture, source)
             if source is not None and checked is None else None)
    if check is not None:
        plan_ = Plan(request, check.kept, capture)
    else:
        plan_ = checked or plan(request, capture=capture)
        if source is not None:
            plan_cache.store(source.key, plan_.targets)
    if request.program:
        check_program(request.program)
    ncu = find_ncu()
    request = dataclasses.replace(request, settings=with_section_overlay(request.settings, ncu))
    plan_ = dataclasses.replace(plan_, request=request)  # the same targets, ncu's sections
    if not request.program and not cupy_installed():
        raise NoGpuError(NO_CUPY_HELP)
    slots = gpu_slots(request)
    # Only where ncu replays one kernel (or range) inside one run of the program: replaying
    # the whole program (`application`) runs it again and again, and the gates would open
    # after its first run.
    head_start = (not request.program and head_start_wanted()
                  and request.settings.replay_mode in HEAD_START_REPLAY_MODES
                  and len(plan_.targets) > len(slots))
    out = request.out.resolve()
    run_id, final_dir = _unique_run_dir(out, request.run_id or run_id_for(request))
    started_at = _iso_now()
    total = len(plan_.targets)

    with terminate_as_interrupt(), atomic_directory(final_dir) as tmp:
        # Nothing starts before the first ncu: the environment probe starts beside it; each
        # report's export starts beside its ncu and goes once its ncu is done, beside the
        # next one.
        post = PostProcessing(tmp, ncu, spawner, metrics_csv=request.metrics_csv)
        finished = itertools.count(1)  # next() is atomic: slots on several GPUs share it
        # The next target of a slot starts while the current one is profiled, its runner
        # waiting at gates; only for ncuh's runner and real child processes.
        head_starts = (HeadStarts() if head_start and runner is processes.run_command
                       else None)
        fresh_starts = FreshStartClock()  # what taking another GPU's early start costs
        first_ncu = threading.Event()

        def check_on_this_thread() -> bool:
            """With several GPUs the slots run on threads: the check of a kept plan runs here,
            on the main thread, once the first ncu has started (`run_queue` polls this)."""
            assert check is not None
            if not first_ncu.is_set():
                return False
            check.run()
            return True

        def one(index: int, target: Target, slot: Slot, upcoming: Upcoming[Target]
                ) -> EntryResult:
            early = head_starts.take(slot, index) if head_starts is not None else None

            def start_the_next() -> None:
                if head_starts is not None:
                    head_starts.start_next(
                        slot, upcoming, lambda after: (after.argv(ncu, request.settings, tmp),
                                                       target_environment(after, slot.gpu)))

            watch = (NcuOutputWatch(lambda: head_starts.replay_began(slot),
                                    lambda: head_starts.program_gone(slot))
                     if head_starts is not None else None)
            # A fresh start is timed for the manifest (`start_s`: the next --gpus run plans
            # without it) and for the taking rule.
            own_start: list[float] = []
            fresh = fresh_starts.watch(own_start.append) if early is None else None

            def output(text: str) -> None:
                if progress:
                    progress.output(target.label, text)
                if watch is not None:
                    watch.feed(text)

            def ncu_started() -> None:
                start_the_next()  # first: the next ncu's own start is the longest to hide
                post.start()
                post.prepare(index, target.label, target.report_name)
                first_ncu.set()
                if check is not None:
                    # the main thread checks (another waits); raising stops every ncu
                    check.plan()
                # said once the plan holds: a run stopped by the check says one line only
                if on_start:
                    on_start(target, index, total)
                if progress:
                    progress.start(target.label, index, total, slot.name, len(slots))
                _import_what_follows_ncu()

            entry = profile_target(target, ncu, request.settings, tmp, runner, gpu=slot.gpu,
                                   on_output=output, on_start=ncu_started, early=early,
                                   on_output_at=fresh)
            entry.start_s = own_start[0] if own_start else None
            post.entry_done(entry, last=next(finished) == total, index=index)
            if progress:
                progress.finish(target.label, entry.status, entry.seconds, entry.passes,
                                entry.error)
            if on_done:
                on_done(entry, index, total)
            return entry

        try:
            order = rule = shares = None
            if len(slots) > 1:
                before = previous_entries(out, plan_.targets, request.settings, len(slots))
                estimates = [past.seconds if past else None for past in before]
                order = longest_first(estimates)
                work = [past.work_s if past else None for past in before]
                # Without head starts each target waiting on a GPU will pay its own start.
                rule = TakingRule(estimates, fresh_starts.seconds, work_s=work,
                                  queued_start_s=(0.0 if head_starts is not None
                                                  else typical_start(before)))
                shares = plan_slots(work if head_starts is not None
                                    else with_own_starts(before), len(slots))
            entries = run_queue(plan_.targets, slots, one, order, rule,
                                beside=check_on_this_thread if check is not None else None,
                                plan=shares)
            ncu_done = time.monotonic()
            if check is not None:  # the same targets, now with their project
                plan_ = dataclasses.replace(check.plan(), request=request)
            result = post.finish(entries)
        except BaseException:
            if head_starts is not None:
                head_starts.kill_all()
            post.kill()
            raise
        finally:
            if head_starts is not None:
                head_starts.close()
        if request.bench and not request.program:
            # After the children, not beside them: their CPU load would disturb the timings.
            _write_bench(tmp, plan_, request.bench_sizes)
        _name_gpus(entries, result.gpus)
        timings = {
            "ncu_s": round(sum(entry.seconds for entry in entries), 3),
            "ncu_wall_s": round(ncu_done - clock, 3),
            "post_s": round(result.seconds, 3),
            "post_environment_s": round(result.environment_seconds, 3),
            "post_metrics_s": round(result.metrics_seconds, 3),
            "total_s": round(time.monotonic() - clock, 3),
        }
        manifest = build_manifest(
            plan_, entries, environment=result.environment, ncu=ncu, run_dir=final_dir,
            started_at=started_at, finished_at=_iso_now(), metrics=result.metrics,
            bench=request.bench and not request.program, commit=result.git_commit,
            timings=timings, head_start=head_starts is not None,
        )
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=2, default=str) + "\n")
    return ProfileOutcome(run_id=run_id, run_dir=final_dir, entries=list(entries),
                          metrics_error=result.metrics.get("error"),
                          overlay_note=request.settings.overlay_note)


# What only the end of a run needs: reading ncu's output, waiting for the post-processing
# children, reading their results. Imported while the first ncu runs, where the time is free,
# rather than before ncu starts or after it ends.
_AFTER_NCU = ("harness.profile.ncu_errors", "concurrent.futures", "harness.profile.worker")


def _import_what_follows_ncu() -> None:
    for name in _AFTER_NCU:
        importlib.import_module(name)


def _starting_first(runner: Runner) -> Runner:
    """A caller's runner, which cannot say when its command has started: `on_start` is called
    just before it runs, so that what goes beside ncu still starts (before ncu, then); its
    output is timed as it is handed over."""

    def run(argv: Sequence[str], env: dict[str, str] | None,
            on_output: Callable[[str], None] | None = None, *,
            on_start: Callable[[], None] | None = None,
            on_output_at: Callable[[str, float], None] | None = None) -> tuple[int, str]:
        if on_start is not None:
            on_start()
        if on_output_at is None:
            return runner(argv, env, on_output)

        def output(text: str) -> None:
            if on_output is not None:
                on_output(text)
            on_output_at(text, time.monotonic())

        return runner(argv, env, output)

    return run


def gpu_slots(request: ProfileRequest) -> tuple[Slot, ...]:
    """One slot per GPU asked for with `--gpus`; the default device's one slot otherwise."""
    if request.gpus is None:
        return DEFAULT_SLOTS
    gpus = select_gpus(request.gpus, list_gpus(), allow_mismatch=request.allow_mismatch)
    return tuple(Slot(gpu) for gpu in gpus)


def _name_gpus(entries: Sequence[EntryResult], gpus: Sequence[Gpu]) -> None:
    """Entries that ran unpinned get the GPU the probe lists at their runner's PCI bus ID."""
    for entry in entries:
        if entry.gpu is None and entry.environment:
            gpu = gpu_for_bus_id(gpus, entry.environment.get("pci_bus_id"))
            if gpu is not None:
                entry.gpu = gpu.manifest()
            elif entry.environment.get("gpu"):
                entry.gpu = {"name": entry.environment["gpu"],
                             "pci_bus_id": entry.environment.get("pci_bus_id")}


def _write_bench(run_dir: Path, plan_: Plan, bench_sizes: tuple[SizeWords, ...] = ()) -> None:
    # Imported here: only --bench needs the bench module (and the backends it loads).
    from harness.gpu import run_bench

    project = plan_.project
    assert project is not None  # --bench is refused with a program
    variants = list(dict.fromkeys(t.variant for t in plan_.targets if t.variant))
    # The seed pages' "Benchmark Results" list several sizes while one size is profiled.
    sizes = list(bench_sizes) or list(dict.fromkeys(t.size for t in plan_.targets if t.size))
    run_bench(project, variants, [_size(project, s) for s in sizes],
              references=True).save(run_dir / BENCH)
