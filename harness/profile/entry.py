"""One target's ncu run: start it (or take its head start), time its phases, keep its log,
and turn ncu's output and the runner's result line into an `EntryResult`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.gpu import RESULT_PREFIX
from harness.profile.gpus import Gpu, pinned_environment
from harness.profile.head_start import HEAD_START_REPLAY_MODES, EarlyStart
from harness.profile.ncu_command import NcuSettings
from harness.profile.phases import PhaseClock
from harness.profile.planning import Target
from harness.profile.processes import Runner, package_environment, result_line, run_command
from harness.profile.progress import passes_in
from harness.util import atomic_write_text


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
        ranked = ({"ranked": {"process": target.ranked[0], "rank": target.ranked[1]}}
                  if target.ranked is not None else {})
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
            **ranked,
        }


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


@dataclass(frozen=True)
class _TimedOutput:
    """ncu's output with the time each piece came: to the phase clock and to the caller."""

    clock: PhaseClock | None
    on_output_at: Callable[[str, float], None] | None

    def __call__(self, text: str, at: float) -> None:
        if self.clock is not None:
            self.clock.feed(text, at)
        if self.on_output_at is not None:
            self.on_output_at(text, at)


def _run_ncu(target: Target, ncu: Path, settings: NcuSettings, run_dir: Path, runner: Runner,
             gpu: Gpu | None, on_output: Callable[[str], None] | None,
             on_start: Callable[[], None] | None, early: EarlyStart | None,
             timed: _TimedOutput | None) -> tuple[int, str]:
    """Start the target's ncu (or take its early start) and wait: (exit status, output)."""
    if early is not None:
        if on_start is not None:
            try:
                on_start()
            except BaseException:  # an interrupt, say: this ncu is no longer anyone's to kill
                early.command.kill()
                raise
        # what it printed before its turn is timed as it came, not as it is handed over
        return early.command.wait(on_output, timed)
    keywords: dict[str, Any] = {}
    if on_start is not None:
        keywords["on_start"] = on_start
    if timed is not None:
        keywords["on_output_at"] = timed
    return runner(target.argv(ncu, settings, run_dir), target_environment(target, gpu),
                  on_output, **keywords)


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
    timed = (_TimedOutput(clock, on_output_at) if clock is not None or on_output_at is not None
             else None)
    returncode, output = _run_ncu(target, ncu, settings, run_dir, runner, gpu, on_output,
                                  on_start, early, timed)
    ended = time.monotonic()
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
        return EntryResult(target, "failed", failure.message, ended - started, gpu=where,
                           head_start_s=head_start_s)
    result = _runner_result(output)
    return EntryResult(
        target, "ok", None, ended - started,
        kernel_name=result.get("kernel_name"), rel_error=result.get("rel_error"),
        params=result.get("params"), environment=result.get("environment") or {},
        passes=passes_in(output), gpu=where, head_start_s=head_start_s,
        phases=clock.phases(ended) if clock is not None else None,
    )


@dataclass(frozen=True)
class _StampedOutput:
    """Output handed over by a runner, passed on and stamped with the time it came."""

    on_output: Callable[[str], None] | None
    on_output_at: Callable[[str, float], None]

    def __call__(self, text: str) -> None:
        if self.on_output is not None:
            self.on_output(text)
        self.on_output_at(text, time.monotonic())


@dataclass(frozen=True)
class _StartingFirst:
    """A caller's runner, which cannot say when its command has started: `on_start` is called
    just before it runs, so that what goes beside ncu still starts (before ncu, then); its
    output is timed as it is handed over."""

    runner: Runner

    def __call__(self, argv: Sequence[str], env: dict[str, str] | None,
                 on_output: Callable[[str], None] | None = None, *,
                 on_start: Callable[[], None] | None = None,
                 on_output_at: Callable[[str, float], None] | None = None) -> tuple[int, str]:
        if on_start is not None:
            on_start()
        if on_output_at is None:
            return self.runner(argv, env, on_output)
        return self.runner(argv, env, _StampedOutput(on_output, on_output_at))


def starting_first(runner: Runner) -> Runner:
    """`runner`, calling `on_start` just before it runs (see `_StartingFirst`)."""
    return _StartingFirst(runner)
