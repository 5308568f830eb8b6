"""`ncuh profile` as a library: run each variant (or a user program) under ncu into a run directory.

    request = ProfileRequest(variants=("register_tiled",), sizes=((4096, 4096, 4096),))
    outcome = run_profile(request)          # -> ProfileOutcome (run_dir, entries, exit_code)

Every cheap check fails before anything expensive starts: the plan (variants, sizes, the exact
ncu command lines; `--dry-run` stops there), then ncu and CuPy located, then one ncu per entry in
its own process group under a temporary `.incomplete` directory, with post-processing beside
ncu; `manifest.json` last, then the directory is renamed into place. The order is described in
docs/architecture.md.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import itertools
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from harness import util
from harness.errors import NcuhError, NcuNotFoundError, NoGpuError
from harness.gpu import no_cupy_reason
from harness.profile import plan_cache, processes
from harness.profile.entry import (
    EntryResult,
    profile_target,
    starting_first,
    target_environment,
)
from harness.profile.gpus import list_gpus, select_gpus
from harness.profile.head_start import (
    HEAD_START_REPLAY_MODES,
    FreshStartClock,
    HeadStarts,
    NcuOutputWatch,
    head_starts_on,
)
from harness.profile.manifest import build_manifest, iso_now, name_gpus, run_timings
from harness.profile.ncu_command import CaptureMode, NcuSettings
from harness.profile.past_runs import previous_entries, typical_start, with_own_starts
from harness.profile.planning import (
    Plan,
    ProfileRequest,
    SizeWords,
    Target,
    plan,
    resolve_capture,
    run_id_for,
    size_of,
)
from harness.profile.post import PostProcessing, PostResult
from harness.profile.processes import (
    Runner,
    Spawner,
    in_threads,
    run_command,
    start_command,
    terminate_as_interrupt,
)
from harness.profile.progress import ProgressDisplay
from harness.profile.schedule import (
    DEFAULT_SLOTS,
    Slot,
    TakingRule,
    Upcoming,
    longest_first,
    plan_slots,
    run_queue,
)
from harness.profile.two_pass import FirstPass, run_first_pass, top_targets
from harness.rundir import BENCH, MANIFEST
from harness.util import atomic_directory, atomic_write_text

NCU_HELP = (
    "ncu (Nsight Compute) was not found on PATH, in $NCU_HOME or under "
    "/opt/nvidia/nsight-compute: install it with the CUDA Toolkit or from "
    "https://developer.nvidia.com/nsight-compute, then put its directory on PATH"
)


@dataclass
class ProfileOutcome:
    run_id: str
    run_dir: Path
    entries: list[EntryResult]
    metrics_error: str | None = None  # metrics.csv could not be made (the reports are there)
    overlay_note: str | None = None  # why `pages` ran on ncu's stock sections, when it did
    first_pass: FirstPass | None = None  # --top: the ranking the entries were chosen from
    notes: tuple[str, ...] = ()  # what the caller should tell the user

    @property
    def failures(self) -> list[EntryResult]:
        return [entry for entry in self.entries if entry.status != "ok"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures or self.metrics_error else 0


# ---------------------------------------------------------------- checks before ncu


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


def cupy_installed() -> bool:
    """Whether CuPy can be imported, without importing it (that would load CUDA here)."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):  # a broken or half-imported package
        return False


def gpu_slots(request: ProfileRequest) -> tuple[Slot, ...]:
    """One slot per GPU asked for with `--gpus`; the default device's one slot otherwise."""
    if request.gpus is None:
        return DEFAULT_SLOTS
    gpus = select_gpus(request.gpus, list_gpus(), allow_mismatch=request.allow_mismatch)
    return tuple(Slot(gpu) for gpu in gpus)


def _unique_run_dir(out: Path, run_id: str) -> tuple[str, Path]:
    candidate, n = run_id, 1
    while (out / candidate).exists() or any(out.glob(f".{candidate}.*.incomplete")):
        n += 1
        candidate = f"{run_id}-{n}"
    return candidate, out / candidate


@dataclass(frozen=True)
class _KeptPlanSource:
    """Where a request's kept plan lives: its key and the project file it was made from."""

    key: str
    project_file: Path


def _kept_plan_source(request: ProfileRequest, capture: CaptureMode) -> _KeptPlanSource | None:
    """The key of a project's request (read before anything else reads the project file);
    None for a user's program, with the cache off, or where the file cannot be found."""
    if request.program or not plan_cache.is_on():
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
    return plan_cache.PlanCheck(partial(plan, request, capture=capture), kept, source.key)

# ---------------------------------------------------------------- before the first ncu


@dataclass(frozen=True)
class _Start:
    """What a run settled before its first ncu: the plan, ncu, the GPU slots, its directory."""

    request: ProfileRequest  # with ncu's section folder for `pages`
    plan: Plan
    check: plan_cache.PlanCheck | None  # a kept plan's project check, to run beside ncu
    ncu: Path
    slots: tuple[Slot, ...]
    head_start: bool
    run_id: str
    final_dir: Path


def _choose_plan(request: ProfileRequest, capture: CaptureMode, checked: Plan | None
                 ) -> tuple[Plan, plan_cache.PlanCheck | None]:
    """Names and sizes are checked now, unless this request's plan checked before: then the
    project is checked beside the first ncu (`harness.profile.plan_cache`)."""
    source = _kept_plan_source(request, capture)
    check = (_kept_plan_check(request, capture, source)
             if source is not None and checked is None else None)
    if check is not None:
        return Plan(request, check.kept, capture), check
    plan_ = checked or plan(request, capture=capture)
    if source is not None:
        plan_cache.store(source.key, plan_.targets)
    return plan_, None


def _prepare(request: ProfileRequest, checked: Plan | None) -> _Start:
    """The plan and the cheap checks, in this process, before anything slow starts."""
    capture = resolve_capture(request)
    plan_, check = _choose_plan(request, capture, checked)
    if request.program:
        check_program(request.program)
    ncu = find_ncu()
    request = plan_.request  # as planned: where the sources are looked up, for one
    request = dataclasses.replace(request, settings=with_section_overlay(request.settings, ncu))
    plan_ = dataclasses.replace(plan_, request=request)  # the same targets, ncu's sections
    if not request.program and not cupy_installed():
        raise NoGpuError(no_cupy_reason())
    slots = gpu_slots(request)
    # Only where ncu replays one kernel (or range) inside one run of the program: replaying
    # the whole program (`application`) runs it again and again, and the gates would open
    # after its first run.
    head_start = (not request.program and head_starts_on()
                  and request.settings.replay_mode in HEAD_START_REPLAY_MODES
                  and len(plan_.targets) > len(slots))
    run_id, final_dir = _unique_run_dir(request.out.resolve(),
                                        request.run_id or run_id_for(request))
    return _Start(request, plan_, check, ncu, slots, head_start, run_id, final_dir)


def _ranked(start: _Start, first: FirstPass) -> tuple[_Start, tuple[str, ...]]:
    """The run after its first pass: one target per top kernel. A program of several
    processes needs every GPU it runs on, so its targets are not pinned to one each."""
    plan_ = dataclasses.replace(start.plan, targets=top_targets(first.ranking, start.request))
    processes = len(first.ranking.processes)
    if processes == 1 or start.slots == DEFAULT_SLOTS:
        return dataclasses.replace(start, plan=plan_), ()
    note = (f"the program ran {processes} processes, which need their GPUs: its kernels are "
            "profiled one at a time (--gpus spreads a one-process program's kernels)")
    return dataclasses.replace(start, plan=plan_, slots=DEFAULT_SLOTS), (note,)


def _first_pass(start: _Start, tmp: Path, runner: Runner, post: PostProcessing,
                progress: ProgressDisplay | None) -> tuple[_Start, FirstPass | None,
                                                           tuple[str, ...]]:
    """--top: time and rank every launch first (the environment probe starts beside it)."""
    if start.plan.first_pass is None:
        return start, None, ()
    try:
        first = run_first_pass(start.plan, start.ncu, tmp, runner, post.start, progress)
    except BaseException:
        post.kill()
        raise
    ranked, notes = _ranked(start, first)
    return ranked, first, notes


def _runners(runner: Runner | None, spawner: Spawner | None) -> tuple[Runner, Spawner]:
    """The defaults, looked up now (tests patch them); a caller's runner also starts the
    post-processing jobs, on threads, unless a spawner is given."""
    if runner is None:
        return run_command, spawner or start_command
    return starting_first(runner), spawner or in_threads(runner)


# ---------------------------------------------------------------- the entries, slot by slot


@dataclass(frozen=True)
class _Hooks:
    """A caller's callbacks: one target started, one done; ncu's pass progress."""

    on_start: Callable[[Target, int, int], None] | None = None
    on_done: Callable[[EntryResult, int, int], None] | None = None
    progress: ProgressDisplay | None = None


class _Walk:
    """Profiles each target on the slot `run_queue` hands it to; the state entries share."""

    def __init__(self, start: _Start, tmp: Path, runner: Runner, post: PostProcessing,
                 head_starts: HeadStarts | None, hooks: _Hooks) -> None:
        self.start, self.tmp, self.runner, self.post = start, tmp, runner, post
        self.head_starts, self.hooks = head_starts, hooks
        self.total = len(start.plan.targets)
        self.finished = itertools.count(1)  # next() is atomic: slots on several GPUs share it
        self.fresh_starts = FreshStartClock()  # what taking another GPU's early start costs
        self.first_ncu = threading.Event()

    def check_on_this_thread(self) -> bool:
        """With several GPUs the slots run on threads: the check of a kept plan runs here, on
        the main thread, once the first ncu has started (`run_queue` polls this)."""
        assert self.start.check is not None
        if not self.first_ncu.is_set():
            return False
        self.start.check.run()
        return True

    def one(self, index: int, target: Target, slot: Slot, upcoming: Upcoming[Target]
            ) -> EntryResult:
        """Profile one target on `slot`, then let its export go and tell the caller."""
        heads = self.head_starts
        early = heads.take(slot, index) if heads is not None else None
        hooks = _EntryHooks(self, index, target, slot, upcoming)
        # A fresh start is timed for the manifest (`start_s`: the next --gpus run plans
        # without it) and for the taking rule.
        fresh = self.fresh_starts.watch(hooks.own_start.append) if early is None else None
        entry = profile_target(target, self.start.ncu, self.start.request.settings, self.tmp,
                               self.runner, gpu=slot.gpu, on_output=hooks.output,
                               on_start=hooks.ncu_started, early=early, on_output_at=fresh)
        entry.start_s = hooks.own_start[0] if hooks.own_start else None
        self.post.entry_done(entry, last=next(self.finished) == self.total, index=index)
        progress = self.hooks.progress
        if progress:
            progress.finish(target.label, entry.status, entry.seconds, entry.passes,
                            entry.error)
        if self.hooks.on_done:
            self.hooks.on_done(entry, index, self.total)
        return entry


@dataclass
class _EntryHooks:
    """What one entry's ncu calls back: its output as it comes, and once it has started."""

    walk: _Walk
    index: int
    target: Target
    slot: Slot
    upcoming: Upcoming[Target]
    own_start: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        heads = self.walk.head_starts
        self.watch = (NcuOutputWatch(partial(heads.replay_began, self.slot),
                                     partial(heads.program_gone, self.slot))
                      if heads is not None else None)

    def output(self, text: str) -> None:
        if self.walk.hooks.progress:
            self.walk.hooks.progress.output(self.target.label, text)
        if self.watch is not None:
            self.watch.feed(text)

    def next_command(self, after: Target) -> tuple[list[str], dict[str, str] | None]:
        start = self.walk.start
        return (after.argv(start.ncu, start.request.settings, self.walk.tmp),
                target_environment(after, self.slot.gpu))

    def ncu_started(self) -> None:
        walk = self.walk
        if walk.head_starts is not None:  # first: the next ncu's own start is the longest
            walk.head_starts.start_next(self.slot, self.upcoming, self.next_command)
        walk.post.start()
        walk.post.prepare(self.index, self.target.label, self.target.report_name)
        walk.first_ncu.set()
        if walk.start.check is not None:
            # the main thread checks (another waits); raising stops every ncu
            walk.start.check.plan()
        # said once the plan holds: a run stopped by the check says one line only
        if walk.hooks.on_start:
            walk.hooks.on_start(self.target, self.index, walk.total)
        if walk.hooks.progress:
            walk.hooks.progress.start(self.target.label, self.index, walk.total,
                                      self.slot.name, len(walk.start.slots))
        _import_what_follows_ncu()


def _slot_plan(walk: _Walk) -> tuple[Any, TakingRule | None, Any]:
    """With several GPUs: the targets' order, the rule for taking another GPU's reservation,
    and each GPU's planned share, from the same targets' seconds in earlier runs."""
    start = walk.start
    if len(start.slots) <= 1:
        return None, None, None
    before = previous_entries(start.request.out.resolve(), start.plan.targets,
                              start.request.settings, len(start.slots))
    estimates = [past.seconds if past else None for past in before]
    work = [past.work_s if past else None for past in before]
    heads = walk.head_starts is not None
    # Without head starts each target waiting on a GPU will pay its own start.
    rule = TakingRule(estimates, walk.fresh_starts.seconds, work_s=work,
                      queued_start_s=0.0 if heads else typical_start(before))
    shares = plan_slots(work if heads else with_own_starts(before), len(start.slots))
    return longest_first(estimates), rule, shares


def _walk_all(walk: _Walk) -> tuple[list[EntryResult], Plan, PostResult, float]:
    """Every target, then the post-processing; on any failure every child is stopped.
    Returns the entries, the plan (with its project once checked), what post-processing
    made, and when the last ncu ended."""
    start = walk.start
    try:
        order, rule, shares = _slot_plan(walk)
        beside = walk.check_on_this_thread if start.check is not None else None
        entries = run_queue(start.plan.targets, start.slots, walk.one, order, rule,
                            beside=beside, plan=shares)
        ncu_done = time.monotonic()
        plan_ = start.plan
        if start.check is not None:  # the same targets, now with their project
            plan_ = dataclasses.replace(start.check.plan(), request=start.request)
        return entries, plan_, walk.post.finish(entries), ncu_done
    except BaseException:
        if walk.head_starts is not None:
            walk.head_starts.kill_all()
        walk.post.kill()
        raise
    finally:
        if walk.head_starts is not None:
            walk.head_starts.close()


# ---------------------------------------------------------------- one run, start to end


def _run_profile(request: ProfileRequest, checked: Plan | None, hooks: _Hooks,
                 runner: Runner | None, spawner: Spawner | None) -> ProfileOutcome:
    clock = time.monotonic()
    runner, spawner = _runners(runner, spawner)
    start = _prepare(request, checked)
    request = start.request
    started_at = iso_now()
    with terminate_as_interrupt(), atomic_directory(start.final_dir) as tmp:
        # Nothing starts before the first ncu: the environment probe starts beside it; each
        # report's export starts beside its ncu and goes once its ncu is done.
        post = PostProcessing(tmp, start.ncu, spawner, metrics_csv=request.metrics_csv)
        start, first, notes = _first_pass(start, tmp, runner, post, hooks.progress)
        # The next target of a slot starts while the current one is profiled, its runner
        # waiting at gates; only for ncuh's runner and real child processes.
        head_starts = (HeadStarts() if start.head_start and runner is processes.run_command
                       else None)
        walk = _Walk(start, tmp, runner, post, head_starts, hooks)
        entries, plan_, result, ncu_done = _walk_all(walk)
        bench = request.bench and not request.program
        if bench:  # after the children, not beside them: their load would disturb the timings
            _write_bench(tmp, plan_, request.bench_sizes)
        name_gpus(entries, result.gpus)
        manifest = build_manifest(
            plan_, entries, environment=result.environment, ncu=start.ncu,
            run_dir=start.final_dir, started_at=started_at, finished_at=iso_now(),
            metrics=result.metrics, bench=bench, commit=result.git_commit,
            timings=run_timings(entries, result, clock, ncu_done),
            head_start=head_starts is not None,
            ranking=first.manifest(start.ncu, start.final_dir) if first is not None else None,
        )
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=2, default=str) + "\n")
    return ProfileOutcome(run_id=start.run_id, run_dir=start.final_dir, entries=list(entries),
                          metrics_error=result.metrics.get("error"),
                          overlay_note=request.settings.overlay_note, first_pass=first,
                          notes=notes)


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
    hooks = _Hooks(on_start, on_done, progress)
    try:
        return _run_profile(request, None, hooks, runner, spawner)
    except plan_cache.StalePlan as stale:
        # The project gives other targets than the plan kept for it: start again on the plan
        # the check made (and keep that one).
        return _run_profile(request, stale.checked, hooks, runner, spawner)


# What only the end of a run needs: reading ncu's output, waiting for the post-processing
# children, reading their results. Imported while the first ncu runs, where the time is free,
# rather than before ncu starts or after it ends.
_AFTER_NCU = ("harness.profile.ncu_errors", "concurrent.futures", "harness.profile.worker")


def _import_what_follows_ncu() -> None:
    for name in _AFTER_NCU:
        importlib.import_module(name)


def _write_bench(run_dir: Path, plan_: Plan, bench_sizes: tuple[SizeWords, ...] = ()) -> None:
    # Imported here: only --bench needs the bench module (and the backends it loads).
    from harness.gpu import run_bench

    project = plan_.project
    assert project is not None  # --bench is refused with a program
    variants = list(dict.fromkeys(t.variant for t in plan_.targets if t.variant))
    # The seed pages' "Benchmark Results" list several sizes while one size is profiled.
    sizes = list(bench_sizes) or list(dict.fromkeys(t.size for t in plan_.targets if t.size))
    run_bench(project, variants, [size_of(project, s) for s in sizes],
              references=True).save(run_dir / BENCH)
