"""The profile loop's units, each alone: planning's choice, one entry's hooks, the slot plan,
the runner adapter and the manifest's timings (no ncu, no GPU, no clock read by a test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.profile import KernelFilter
from harness.profile import run as lib
from harness.profile.entry import EntryResult, _TimedOutput, starting_first
from harness.profile.manifest import run_timings
from harness.profile.planning import PROGRAM_LABEL, Plan, ProfileRequest, Target
from harness.profile.post import PostResult
from harness.profile.schedule import DEFAULT_SLOTS, Slot, TakingRule


def _target(label: str) -> Target:
    return Target(label=label, variant="v", size=(256,), params={}, program=("python",),
                  kernel_filter=KernelFilter())


def _start(tmp_path: Path, targets: tuple[Target, ...], slots: tuple[Slot, ...] = DEFAULT_SLOTS
           ) -> lib._Start:
    request = ProfileRequest(out=tmp_path / "runs")
    return lib._Start(request, Plan(request, targets, "nvtx"), None, Path("/opt/ncu"), slots,
                      False, "run-1", tmp_path / "runs" / "run-1")


def test_run_timings_sum_the_entries_and_round_to_milliseconds() -> None:
    entries = [EntryResult(_target("a"), "ok", seconds=1.23449),
               EntryResult(_target("b"), "failed", "no", seconds=2.0)]
    post = PostResult({}, {}, None, seconds=0.5004, environment_seconds=0.25,
                      metrics_seconds=0.1236)
    assert run_timings(entries, post, started=10.0, ncu_done=13.5, now=14.25) == {
        "ncu_s": 3.234, "ncu_wall_s": 3.5, "post_s": 0.5, "post_environment_s": 0.25,
        "post_metrics_s": 0.124, "total_s": 4.25}


def test_a_callers_runner_is_told_of_the_start_first_and_its_output_is_stamped() -> None:
    said: list[Any] = []

    def runner(argv: Any, env: Any, on_output: Any = None) -> tuple[int, str]:
        said.append(("ran", list(argv)))
        on_output("==PROF== pass 1\n")
        return 0, "done"

    run = starting_first(runner)
    assert run(["ncu"], None, lambda text: said.append(("output", text)),
               on_start=lambda: said.append("started"),
               on_output_at=lambda text, at: said.append(("at", text, type(at)))) == (0, "done")
    assert said == ["started", ("ran", ["ncu"]), ("output", "==PROF== pass 1\n"),
                    ("at", "==PROF== pass 1\n", float)]
    # without on_output_at the caller's on_output is handed to the runner as it is
    said.clear()
    assert run(["ncu"], None, lambda text: said.append(text)) == (0, "done")
    assert said == [("ran", ["ncu"]), "==PROF== pass 1\n"]


def test_timed_output_feeds_the_phase_clock_and_the_caller() -> None:
    from harness.profile.phases import PhaseClock

    clock = PhaseClock(100.0)
    seen: list[tuple[str, float]] = []
    timed = _TimedOutput(clock, lambda text, at: seen.append((text, at)))
    pieces = [("==PROF== Connected to process 7\n", 100.5),
              ('==PROF== Profiling "k" - 0: 0%....', 101.5),  # no line end yet
              ("100% - 9 passes\n==PROF== Disconnected from process 7\n", 102.25)]
    for text, at in pieces:
        timed(text, at)
    assert seen == pieces
    assert clock.phases(103.0) == {"to_first_pass_s": 1.5, "passes_s": 0.75, "report_s": 0.75}
    assert _TimedOutput(None, None)("anything", 1.0) is None  # neither: nothing to tell


def test_a_program_is_planned_as_one_target_and_no_kept_plan_is_checked(
    tmp_path: Path,
) -> None:
    request = ProfileRequest(program=("python", "k.py"), out=tmp_path)
    plan, check = lib._choose_plan(request, "nvtx", None)
    assert check is None
    assert [t.label for t in plan.targets] == [PROGRAM_LABEL]
    assert plan.targets[0].program == ("python", "k.py")


def test_one_slot_needs_no_slot_plan_and_two_hand_unknown_targets_out_in_order(
    tmp_path: Path,
) -> None:
    targets = (_target("a"), _target("b"), _target("c"))
    walk = lib._Walk(_start(tmp_path, targets), tmp_path, lib.run_command, None,
                     None, lib._Hooks())  # type: ignore[arg-type]
    assert lib._slot_plan(walk) == (None, None, None)
    two = lib._Walk(_start(tmp_path, targets, (Slot(), Slot())), tmp_path, lib.run_command,
                    None, None, lib._Hooks())  # type: ignore[arg-type]
    order, rule, shares = lib._slot_plan(two)
    assert order == [0, 1, 2]  # no earlier run: nothing known, item order
    assert isinstance(rule, TakingRule)
    assert shares is None  # nothing to share out by: the slots take from one queue


class _Post:
    """Post-processing as the walk drives it, recorded."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def start(self) -> None:
        self.calls.append("start")

    def prepare(self, index: int, label: str, report: str) -> None:
        self.calls.append(("prepare", index, label, report))

    def entry_done(self, entry: EntryResult, *, last: bool, index: int) -> None:
        self.calls.append(("done", entry.label, last, index))


def test_one_entry_starts_post_processing_with_its_ncu_and_tells_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    said: list[Any] = []

    def profile_target(target: Target, ncu: Path, settings: Any, run_dir: Path, runner: Any,
                       **keywords: Any) -> EntryResult:
        said.append(("ncu", target.label, ncu, run_dir, keywords["gpu"], keywords["early"]))
        keywords["on_start"]()
        keywords["on_output"]("==PROF== Connected\n")
        return EntryResult(target, "ok", seconds=1.5, passes=9)

    monkeypatch.setattr(lib, "profile_target", profile_target)
    post = _Post()
    hooks = lib._Hooks(on_start=lambda t, i, n: said.append(("on_start", t.label, i, n)),
                       on_done=lambda e, i, n: said.append(("on_done", e.label, i, n)))
    targets = (_target("a"), _target("b"))
    walk = lib._Walk(_start(tmp_path, targets), tmp_path, lib.run_command, post,  # type: ignore[arg-type]
                     None, hooks)
    entries = [walk.one(i, t, DEFAULT_SLOTS[0], lambda: None)  # type: ignore[arg-type]
               for i, t in enumerate(targets)]
    assert [e.label for e in entries] == ["a", "b"]
    assert said == [("ncu", "a", Path("/opt/ncu"), tmp_path, None, None), ("on_start", "a", 0, 2),
                    ("on_done", "a", 0, 2),
                    ("ncu", "b", Path("/opt/ncu"), tmp_path, None, None), ("on_start", "b", 1, 2),
                    ("on_done", "b", 1, 2)]
    assert post.calls == ["start", ("prepare", 0, "a", "a.ncu-rep"), ("done", "a", False, 0),
                          "start", ("prepare", 1, "b", "b.ncu-rep"), ("done", "b", True, 1)]
    assert walk.first_ncu.is_set()
    assert entries[0].start_s is None  # the fake fed no output with times: no own start seen
