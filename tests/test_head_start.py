"""Head starts: the next variant's ncu starts while the current one is profiled, and waits.

The children are the stand-in ncu (tests/standins), which waits at the runner's own gates
(`harness.gpu.gates`) as the runner under a real ncu does, and logs when it was spawned, when
it began profiling, when its program disconnected and when it ended. What is checked: every
next ncu is spawned before the one ahead of it has ended, yet profiles only once the program
ahead has disconnected (while that ncu still writes its report); its CUDA gate opens only once
the one ahead is profiling; the manifest says so; `NCUH_HEAD_START=off` and a user's program get
none; a failing target still lets the next one go; the gates on their own.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from standin_support import standins_fixture  # noqa: F401  (the `standins` fixture)

from harness.cli import main
from harness.errors import NcuhError
from harness.gpu import gates
from harness.gpu.protocol import GATES_OWNER_ENV, LAUNCH_AFTER_ENV, START_CUDA_AFTER_ENV
from harness.profile.head_start import HEAD_START_ENV, NcuOutputWatch, head_starts_on
from harness.rundir.manifest import load_run

VARIANTS = ("naive", "coalesced", "smem_tiled")


def _runs(log: Path) -> dict[str, dict]:
    return {run["label"]: run for run in map(json.loads, log.read_text().splitlines())}


def _own_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of this test's own for ncuh's gate files (other runs share /tmp)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _profile(out: Path, *extra: str) -> Path:
    argv = ["profile", "--size", "256", "--out", str(out), *extra]
    for variant in VARIANTS:
        argv += ["--variant", variant]
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    run_dir = Path(result.stdout.strip().splitlines()[-1])  # what ncuh said it wrote
    assert run_dir.parent == out and run_dir.is_dir()
    return run_dir


def _events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **awaits: str) -> Path:
    """The stand-ins' events file (`label event` lines in the order they happened); `awaits`
    holds an event of one run until another run's event has happened (`NCUH_FAKE_NCU_AWAIT`,
    keys like `naive_256__end`)."""
    events = tmp_path / "events"
    monkeypatch.setenv("NCUH_FAKE_NCU_EVENTS", str(events))
    monkeypatch.setenv("NCUH_FAKE_NCU_AWAIT", ",".join(
        f"{key.replace('__', '/')}={value}" for key, value in awaits.items()))
    return events


def _order(events: Path) -> list[str]:
    return events.read_text().splitlines()


def _before(order: list[str], first: str, then: str) -> bool:
    """Whether event `first` happened before event `then` (both happened)."""
    return order.index(first) < order.index(then)


def test_each_next_ncu_starts_early_but_profiles_after_the_one_ahead(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order is the stand-ins' own (each event appended as it happens), not a clock's.
    Each ncu holds the end of its report until the next one has begun profiling: a harness
    that started the next ncu only after this one's exit would show that next one spawned
    after this one's end (a minute on, when the stand-in gives up waiting)."""
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.3")
    labels = [f"{variant}_256" for variant in VARIANTS]
    events = _events(tmp_path, monkeypatch, **{f"{ahead}__end": f"{behind}/start"
                                               for ahead, behind in itertools.pairwise(labels)})
    own_tmp = _own_tempdir(tmp_path, monkeypatch)
    run_dir = _profile(tmp_path / "runs")
    assert not list(own_tmp.glob("ncuh-gates-*"))  # the gate files are gone with the run
    order = _order(events)
    assert sorted(order) == sorted(f"{label} {name}" for label in labels for name in (
        "spawned", "cuda", "start", "disconnected", "end"))
    for ahead, behind in itertools.pairwise(labels):
        # started while the one ahead still ran
        assert _before(order, f"{behind} spawned", f"{ahead} end")
        # but used the GPU only once the program ahead had gone, while its report was written
        assert _before(order, f"{ahead} disconnected", f"{behind} start")
        # CUDA may start once the one ahead profiles
        assert _before(order, f"{ahead} start", f"{behind} cuda")
    runs = _runs(standins)
    assert runs[labels[0]]["waited_cuda"] == runs[labels[0]]["waited_launch"] == 0.0
    manifest = load_run(run_dir).manifest
    assert manifest["ncu"]["head_start"] is True
    entries = manifest["entries"]
    assert [e["status"] for e in entries] == ["ok"] * 3
    assert entries[0]["head_start_s"] is None
    assert all(e["head_start_s"] > 0 for e in entries[1:])
    # an entry's phases split its seconds (their values on a known clock: test_phases.py)
    for entry in entries:
        phases = entry["phases"]
        assert set(phases) == {"to_first_pass_s", "passes_s", "report_s"}
        assert sum(phases.values()) == pytest.approx(entry["seconds"], abs=0.005)
        assert entry["seconds"] > 0 and phases["passes_s"] > 0


def test_head_start_off_starts_each_ncu_after_the_one_ahead(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.3")
    monkeypatch.setenv(HEAD_START_ENV, "off")
    events = _events(tmp_path, monkeypatch)
    run_dir = _profile(tmp_path / "runs")
    order = _order(events)
    for ahead, behind in itertools.pairwise(f"{variant}_256" for variant in VARIANTS):
        assert _before(order, f"{ahead} end", f"{behind} spawned")
    manifest = load_run(run_dir).manifest
    assert manifest["ncu"]["head_start"] is False
    assert all(entry["head_start_s"] is None for entry in manifest["entries"])


def test_a_failing_target_still_lets_the_next_one_go(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.3")
    monkeypatch.setenv("NCUH_FAKE_NCU_FAIL", "coalesced_256")
    events = _events(tmp_path, monkeypatch)
    run_dir = _profile(tmp_path / "runs")
    assert _before(_order(events), "coalesced_256 disconnected", "smem_tiled_256 start")
    entries = load_run(run_dir).manifest["entries"]
    assert [e["status"] for e in entries] == ["ok", "failed", "ok"]
    assert entries[2]["head_start_s"] is not None


def test_an_interrupt_as_an_early_target_takes_its_turn_leaves_no_ncu_behind(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.profile import processes
    from harness.profile import run as lib
    from harness.profile.post import PostProcessing

    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "3")
    own_tmp = _own_tempdir(tmp_path, monkeypatch)
    prepare = PostProcessing.prepare

    def interrupted_at_the_second(self, index: int, label: str, report_name: str) -> None:
        if index == 1:  # coalesced, started early, now taking its turn
            raise KeyboardInterrupt
        prepare(self, index, label, report_name)

    monkeypatch.setattr(PostProcessing, "prepare", interrupted_at_the_second)
    request = lib.ProfileRequest(variants=VARIANTS, sizes=("256",), out=tmp_path / "runs")
    with pytest.raises(KeyboardInterrupt):
        lib.run_profile(request)
    with processes._RUNNING_LOCK:
        alive = [process.args for process in processes._RUNNING if process.poll() is None]
    assert alive == []
    assert not list(own_tmp.glob("ncuh-gates-*"))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_application_replay_gets_no_head_start(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ncu runs the whole program once per pass there: its first disconnection is not the
    last, so the gates could open while it is still measured."""
    from harness.profile import run as lib
    from harness.profile.ncu_command import NcuSettings

    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.3")
    events = _events(tmp_path, monkeypatch)
    request = lib.ProfileRequest(variants=VARIANTS[:2], sizes=("256",), out=tmp_path / "runs",
                                 settings=NcuSettings(replay_mode="application"))
    outcome = lib.run_profile(request)
    assert _before(_order(events), "naive_256 end", "coalesced_256 spawned")
    manifest = load_run(outcome.run_dir).manifest
    assert manifest["ncu"]["head_start"] is False
    # nor phases: a disconnection there does not end the passes
    assert [entry["phases"] for entry in manifest["entries"]] == [None, None]


def test_on_two_gpus_a_reserved_target_taken_by_the_idle_gpu_runs_once(
    tmp_path: Path, standins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slow first target's GPU starts its next target early; the other GPU, done with the
    rest, takes that target instead of idling: the early ncu is stopped, the target is
    profiled once, on the idle GPU. The slow one holds its disconnection until smem_tiled has
    ended: had smem_tiled waited for it on its GPU, it would end after it."""
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.2")
    events = _events(tmp_path, monkeypatch, naive_256__disconnected="smem_tiled_256/end")
    run_dir = _profile(tmp_path / "runs", "--gpus", "all")
    runs = [json.loads(line) for line in standins.read_text().splitlines()]
    labels = sorted(run["label"] for run in runs)
    assert labels == sorted(f"{variant}_256" for variant in VARIANTS)  # each once
    by_label = {run["label"]: run for run in runs}
    slow_gpu = by_label["naive_256"]["gpu"]
    assert {by_label[f"{v}_256"]["gpu"] for v in VARIANTS[1:]} == {"GPU-0a", "GPU-1b"} - {
        slow_gpu}
    # smem_tiled did not wait for naive on naive's GPU: whichever GPU set it aside, the other
    # GPU profiled it beside naive
    assert _before(_order(events), "smem_tiled_256 end", "naive_256 end")
    entries = load_run(run_dir).manifest["entries"]
    assert [e["status"] for e in entries] == ["ok"] * 3


def test_taking_a_target_another_slot_started_early_stops_that_ncu(tmp_path: Path) -> None:
    from harness.profile.head_start import HeadStarts

    head_starts = HeadStarts()
    try:
        sleep = [sys.executable, "-c", "import time; time.sleep(30)"]
        head_starts.start_next("gpu0", lambda: (2, "smem"), lambda target: (sleep, None))
        (early,) = head_starts._waiting.values()
        assert early.index == 2 and early.command.process.poll() is None
        assert head_starts.take("gpu1", 2) is None  # gpu1 runs it itself, pinned to gpu1
        assert early.command.process.wait(timeout=60) is not None  # the early ncu is stopped
        assert head_starts._waiting == {}
        head_starts.start_next("gpu0", lambda: None, lambda target: (sleep, None))
        assert head_starts._waiting == {}  # nothing left: nothing started
    finally:
        head_starts.close()


def test_a_single_target_gets_no_head_start(tmp_path: Path, standins: Path) -> None:
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--out", str(tmp_path / "runs")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run_dir,) = list((tmp_path / "runs").iterdir())
    manifest = load_run(run_dir).manifest
    assert manifest["ncu"]["head_start"] is False


@pytest.mark.parametrize(("value", "wanted"), [
    (None, True), ("on", True), ("1", True), ("off", False), ("OFF", False), ("0", False),
    ("no", False), ("false", False)])
def test_head_starts_on_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, wanted: bool
) -> None:
    if value is None:
        monkeypatch.delenv(HEAD_START_ENV, raising=False)
    else:
        monkeypatch.setenv(HEAD_START_ENV, value)
    assert head_starts_on() is wanted


def test_output_watch_sees_the_first_replay_once_even_across_split_output() -> None:
    replays: list[int] = []
    watch = NcuOutputWatch(lambda: replays.append(1), lambda: None)
    watch.feed("==PROF== Connected to process 1\n==PROF== Prof")
    assert replays == []
    watch.feed('iling "k" - 0: 0%....')  # no line end yet: the dots come as ncu replays
    assert replays == [1]
    watch.feed('50%....100% - 23 passes\n==PROF== Profiling "k2" - 1: 0%')
    assert replays == [1]


def test_output_watch_calls_the_program_gone_when_every_process_disconnected() -> None:
    gone: list[int] = []
    watch = NcuOutputWatch(lambda: None, lambda: gone.append(1))
    watch.feed("==PROF== Disconnected from process 9\n")  # none connected: not ours
    watch.feed("==PROF== Connected to process 1 (/usr/bin/python3)\n")
    watch.feed("==PROF== Connected to process 2 (/usr/bin/python3)\n")
    watch.feed("==PROF== Disconnected from process 1\n==PROF== Disconn")
    assert gone == []  # process 2 may still use the GPU; a line is whole only at its end
    watch.feed("ected from process 2\n")
    assert gone == [1]
    watch.feed("==PROF== Report: /x.ncu-rep\n==PROF== Disconnected from process 2\n")
    assert gone == [1]


def test_output_watch_ignores_a_program_that_prints_the_words_mid_line() -> None:
    gone: list[int] = []
    watch = NcuOutputWatch(lambda: None, lambda: gone.append(1))
    watch.feed("==PROF== Connected to process 1\n")
    watch.feed("a log line: x ==PROF== Disconnected from process 1 ...")
    assert gone == []


# ------------------------------------------------------------------ the gates on their own


def test_gates_return_at_once_without_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (START_CUDA_AFTER_ENV, LAUNCH_AFTER_ENV, GATES_OWNER_ENV):
        monkeypatch.delenv(name, raising=False)
    assert gates.wait_to_start_cuda() == 0.0
    assert gates.wait_to_launch() == 0.0


class FakeTime:
    """The gates' clock and sleep: each sleep moves the clock on by what it was asked for, and
    `at_poll[n]` runs when the gate is polled the n-th time."""

    def __init__(self, at_poll: dict[int, Callable[[], object]]) -> None:
        self.now, self.polls, self.at_poll = 100.0, 0, at_poll

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.polls += 1
        self.at_poll.get(self.polls, lambda: None)()


def test_a_gate_waits_for_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "launch"
    monkeypatch.setenv(LAUNCH_AFTER_ENV, str(gate))
    monkeypatch.setenv(GATES_OWNER_ENV, str(os.getpid()))
    clock = FakeTime({40: gate.touch})
    monkeypatch.setattr(gates, "time", clock)
    waited = gates.wait_to_launch()
    assert clock.polls == 40  # it went on polling until the file was there, and no longer
    assert waited == pytest.approx(40 * gates.POLL_S)
    assert gates.wait_to_launch() == 0.0 and clock.polls == 40  # open stays open


def test_a_gate_gives_up_when_its_owner_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    monkeypatch.setenv(START_CUDA_AFTER_ENV, str(tmp_path / "never"))
    monkeypatch.setenv(GATES_OWNER_ENV, str(gone.pid))
    # binary fractions: the fake clock adds them up exactly
    monkeypatch.setattr(gates, "POLL_S", 0.25)
    monkeypatch.setattr(gates, "OWNER_CHECK_S", 1.0)
    clock = FakeTime({})
    monkeypatch.setattr(gates, "time", clock)
    with pytest.raises(NcuhError, match="is gone"):
        gates.wait_to_start_cuda()
    assert clock.polls == 4  # given up at the first look at its owner, OWNER_CHECK_S in


@pytest.mark.parametrize(("fresh_start_s", "c_with_a"), [(1.0, True), (0.05, False)])
def test_a_free_slot_takes_a_reservation_only_where_a_fresh_start_is_worth_it(
    fresh_start_s: float, c_with_a: bool, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two slots: a (0.6 s) and b (0.1 s) start together, a's slot reserves c. When b is
    done, a has 0.5 s left: with a 1 s fresh start, c waits for a's slot (which started it
    early); with a 0.05 s one, the free slot takes it. The schedule reads a clock of the
    test's own; a ends only once the free slot has decided."""
    import types

    from harness.profile import schedule
    from harness.profile.schedule import Slot, TakingRule, run_queue

    clock = [0.0]
    monkeypatch.setattr(schedule, "time", types.SimpleNamespace(monotonic=lambda: clock[0],
                                                                sleep=time.sleep))
    take = schedule._Handout.take
    b_taken, c_reserved, decided = threading.Event(), threading.Event(), threading.Event()

    def taking(self, slot: int):  # type: ignore[no-untyped-def]
        taken = take(self, slot)
        if taken is schedule.WAIT:
            decided.set()  # the free slot leaves c to a's slot, for now
        return taken

    monkeypatch.setattr(schedule._Handout, "take", taking)
    ran: dict[str, int] = {}

    def work(index: int, item: str, slot: Slot, upcoming) -> str:  # type: ignore[no-untyped-def]
        ran[item] = 0 if slot.gpu is None else 1
        if item == "a":
            assert b_taken.wait(60)
            assert upcoming() == (2, "c")
            c_reserved.set()
            assert decided.wait(60)
        elif item == "b":
            b_taken.set()
            assert c_reserved.wait(60)
            clock[0] = 0.1  # b is done, 0.1 s in
        else:
            decided.set()  # the free slot took c
        return item

    slots = (Slot(), Slot(gpu=types.SimpleNamespace(index=1)))  # type: ignore[arg-type]
    rule = TakingRule([0.6, 0.1, 0.05], lambda: fresh_start_s)
    assert run_queue(["a", "b", "c"], slots, work, [0, 1, 2], rule) == ["a", "b", "c"]
    assert ran["a"] != ran["b"]
    assert (ran["c"] == ran["a"]) is c_with_a


def test_the_taking_rule_weighs_what_is_left_against_a_fresh_start() -> None:
    from harness.profile.schedule import TakingRule

    rule = TakingRule([10.0, None], lambda: 3.0)
    assert rule.worth_taking(0, 5.0)  # 5 s left: more than a fresh start's 3
    assert rule.worth_taking(0, 6.99)
    assert not rule.worth_taking(0, 7.0)  # 3 s left: no more than a fresh start
    assert not rule.worth_taking(0, 12.9)  # overdue by 2.9 s: it may end any moment
    assert rule.worth_taking(0, 13.01)  # overdue by more than a start: the estimate was off
    assert rule.worth_taking(1, 0.0) and rule.worth_taking(None, 0.0)  # nothing known
    assert TakingRule([10.0], lambda: None).worth_taking(0, 9.9)  # no start measured yet
    assert TakingRule().worth_taking(0, 0.0)


def test_a_free_slot_waits_while_the_rule_says_so_and_is_done_once_the_owner_takes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import schedule

    clock = [100.0]
    monkeypatch.setattr(schedule.time, "monotonic", lambda: clock[0])
    handout = schedule._Handout(["a", "b", "c"], [0, 1, 2],
                                schedule.TakingRule([4.0, 1.0, 1.0], lambda: 2.0))
    assert handout.take(0) == (0, "a")
    assert handout.take(1) == (1, "b")
    assert handout.reserve(0) == (2, "c")  # slot 0 starts c early
    clock[0] = 101.0  # slot 1 is done; a has 3 s left, more than a 2 s fresh start
    assert handout.take(1) == (2, "c")
    handout = schedule._Handout(["a", "b", "c"], [0, 1, 2],
                                schedule.TakingRule([4.0, 1.0, 1.0], lambda: 2.0))
    clock[0] = 200.0
    handout.take(0), handout.take(1), handout.reserve(0)
    clock[0] = 203.0  # a has 1 s left: slot 1 waits
    assert handout.take(1) is schedule.WAIT
    assert handout.take(0) == (2, "c")  # a is done: slot 0 runs c, started early
    assert handout.take(1) is None and handout.take(0) is None


def test_the_fresh_start_clock_keeps_the_shortest_start_to_first_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.profile import head_start

    clock = [10.0]
    monkeypatch.setattr(head_start.time, "monotonic", lambda: clock[0])
    fresh = head_start.FreshStartClock()
    assert fresh.seconds() is None
    one = fresh.watch()  # started at 10.0
    one("==PROF== Connected to process 1 (/usr/bin/python3)\n==PROF== Prof", 13.0)  # split
    assert fresh.seconds() is None
    clock[0] = 15.0  # handed over late (the kept plan's check ran): timed as it came
    one('iling "k" - 0: 0%....', 13.5)
    assert fresh.seconds() == 3.5
    clock[0] = 20.0
    two = fresh.watch()
    two('==PROF== Profiling "k" - 0: 0%', 22.0)
    one('==PROF== Profiling "k" - 1: 0%', 40.0)  # a second kernel of the first: counted once
    assert fresh.seconds() == 2.0
