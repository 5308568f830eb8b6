"""Where an entry's seconds go: to its first replay pass, through its passes, to its report.

ncu's output says when the kernel's replay begins (`==PROF== Profiling ...`) and when the program
has left it (`==PROF== Disconnected from process N`). Timed as each line came, they split an
entry's `seconds` into the manifest's `phases`: `to_first_pass_s` (its start, or what a head
start left of it), `passes_s` (the replay passes and the runner's end) and `report_s` (ncu
writing the report). Only for ncuh's own runner, where one process profiles one launch
(`head_start.HEAD_START_REPLAY_MODES`).
"""

from __future__ import annotations

import time

from harness.profile.head_start import NcuOutputWatch

# The manifest's names of the phases, in order.
PHASES = ("to_first_pass_s", "passes_s", "report_s")


class PhaseClock:
    """Fed an entry's ncu output with the time each piece came; `phases` at its end."""

    def __init__(self, turn: float) -> None:
        self._turn = turn
        self._at = turn
        self._replay: float | None = None
        self._gone: float | None = None
        self._watch = NcuOutputWatch(self._replay_began, self._program_gone)

    def feed(self, text: str, at: float | None = None) -> None:
        """Feed output that came at `at` (`time.monotonic()`; None: now)."""
        self._at = time.monotonic() if at is None else at
        self._watch.feed(text)

    def _replay_began(self) -> None:
        self._replay = self._at

    def _program_gone(self) -> None:
        self._gone = self._at

    def phases(self, end: float) -> dict[str, float] | None:
        """The three phases up to `end` (the ncu's exit), in seconds; None where the output
        did not show both the first pass and the program's disconnection."""
        if self._replay is None or self._gone is None:
            return None
        seconds = (self._replay - self._turn, self._gone - self._replay, end - self._gone)
        return {name: round(value, 3) for name, value in zip(PHASES, seconds, strict=True)}
