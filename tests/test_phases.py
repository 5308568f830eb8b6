"""An entry's phases from ncu's output, timed as each piece came (`harness.profile.phases`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.profile.phases import PhaseClock
from harness.profile.processes import run_command


def test_phases_split_the_time_at_the_first_pass_and_the_disconnection() -> None:
    clock = PhaseClock(turn=100.0)
    clock.feed("==PROF== Connected to process 7 (/usr/bin/python3)\n", at=100.5)
    clock.feed('==PROF== Profiling "k" - 0: 0%....', at=101.25)  # the dots: no line end yet
    clock.feed("50%....100% - 23 passes\nncuh-runner-result: {}\n", at=104.0)
    clock.feed("==PROF== Disconnected from process 7\n", at=104.5)
    clock.feed("==PROF== Report: /r.ncu-rep\n", at=105.0)
    assert clock.phases(end=105.75) == {"to_first_pass_s": 1.25, "passes_s": 3.25,
                                        "report_s": 1.25}


def test_passes_begun_before_the_turn_read_below_zero() -> None:
    clock = PhaseClock(turn=10.0)
    clock.feed("==PROF== Connected to process 7\n", at=8.0)
    clock.feed('==PROF== Profiling "k" - 0: 0%', at=9.5)
    clock.feed("....100% - 5 passes\n==PROF== Disconnected from process 7\n", at=11.0)
    assert clock.phases(end=11.5) == {"to_first_pass_s": -0.5, "passes_s": 1.5,
                                      "report_s": 0.5}


@pytest.mark.parametrize("output", [
    "==PROF== Connected to process 7\n==PROF== Disconnected from process 7\n",  # no kernel
    '==PROF== Connected to process 7\n==PROF== Profiling "k" - 0: 0%...',  # killed mid-pass
    "ncuh-runner: naive 256x256x256: no GPU\n",  # never connected
])
def test_no_phases_without_both_the_first_pass_and_the_disconnection(output: str) -> None:
    clock = PhaseClock(turn=0.0)
    clock.feed(output, at=1.0)
    assert clock.phases(end=2.0) is None


def test_output_without_a_time_is_timed_as_it_is_fed(monkeypatch: pytest.MonkeyPatch) -> None:
    now = iter([3.0, 7.0])
    monkeypatch.setattr("harness.profile.phases.time.monotonic", lambda: next(now))
    clock = PhaseClock(turn=1.0)
    clock.feed('==PROF== Connected to process 7\n==PROF== Profiling "k" - 0: 0%')
    clock.feed("100% - 2 passes\n==PROF== Disconnected from process 7\n")
    assert clock.phases(end=8.0) == {"to_first_pass_s": 2.0, "passes_s": 4.0, "report_s": 1.0}


def test_a_line_split_across_pieces_is_timed_when_it_is_whole_enough() -> None:
    clock = PhaseClock(turn=0.0)
    clock.feed("==PROF== Connected to process 7\n==PROF== Prof", at=1.0)
    clock.feed('iling "k" - 0: 0%', at=2.0)  # the replay begins with this piece
    clock.feed("100% - 2 passes\n==PROF== Disconn", at=3.0)
    clock.feed("ected from process 7\n", at=4.0)  # a disconnection counts once its line ends
    assert clock.phases(end=5.0) == {"to_first_pass_s": 2.0, "passes_s": 2.0, "report_s": 1.0}


def test_a_disconnection_before_any_pass_ends_nothing() -> None:
    """A program that left before its kernel ran (a failed check, say): no phases."""
    clock = PhaseClock(turn=0.0)
    clock.feed("==PROF== Connected to process 7\n==PROF== Disconnected from process 7\n", at=1.0)
    clock.feed('==PROF== Profiling "k" - 0: 0%....100% - 2 passes\n', at=2.0)
    assert clock.phases(end=3.0) is None


def test_the_reader_keeps_the_time_each_piece_came(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output that came while the caller was busy elsewhere is timed as it came (a fake clock:
    1.0 while the caller is busy, 2.0 after), and handed over once the caller is free."""
    import threading
    import types

    from harness.profile import processes

    now = [1.0]
    read = threading.Event()  # the output reader has timed a piece

    def monotonic() -> float:
        reading = now[0]  # before the event: the caller may move the clock on at once
        if threading.current_thread().name.startswith("ncuh-output-"):
            read.set()
        return reading

    monkeypatch.setattr(processes, "time", types.SimpleNamespace(monotonic=monotonic))
    go = tmp_path / "go"
    script = tmp_path / "speak.py"
    # "one", then "two" once the go file is there: one write per line, whatever
    # PYTHONUNBUFFERED says (unbuffered, print writes the text and its newline apart).
    script.write_text("import os, pathlib, time\nos.write(1, b'one\\n')\n"
                      f"while not pathlib.Path({str(go)!r}).exists():\n    time.sleep(0.005)\n"
                      "os.write(1, b'two\\n')\n")
    came: list[tuple[str, float]] = []
    handed_while_busy: list[int] = []

    def busy() -> None:  # ncuh's own work once ncu has started: until "one" has been read
        assert read.wait(60)
        handed_while_busy.append(len(came))
        now[0] = 2.0
        go.touch()

    status, output = run_command([sys.executable, str(script)], on_start=busy,
                                 on_output_at=lambda text, at: came.append((text, at)))
    assert status == 0 and output == "one\ntwo\n"
    assert handed_while_busy == [0]  # nothing was handed over while the caller was busy
    assert came == [("one\n", 1.0), ("two\n", 2.0)]  # but each is timed as it came
