"""An entry's phases from ncu's output, timed as each piece came (`harness.profile.phases`)."""

from __future__ import annotations

import pytest

from harness.profile.phases import PhaseClock


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
