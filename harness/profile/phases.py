"""Where an entry's seconds go: to its first replay pass, through its passes, to its report.

ncu's output says when the kernel's replay begins (`==PROF== Profiling "kernel" ...`) and when
the program has left it (`==PROF== Disconnected from process N`, after the last pass, before
the report is written). Timed as each line came, they split an entry's `seconds`, which count
from its turn, in three (the manifest's `phases`):

* `to_first_pass_s`: what came before the first replay pass. For a target that paid its own
  start, that start (ncu, Python, the imports, the compile, the check, the warm-up); for one
  started early (`harness.profile.head_start`), what its head start left of its check and
  warm-up. Below zero where its passes began before its turn (while the ncu ahead of it still
  wrote its report);
* `passes_s`: the replay passes (ncu's own time on the GPU, with their saves and restores);
* `report_s`: ncu writing the report and exiting.

So a target that takes longer beside another (`--gpus`) or after a change says which part
grew. Only where the program runs once (`head_start.HEAD_START_REPLAY_MODES`): with
`application` replay each pass runs it again, and its first disconnection is not its last.
"""

from __future__ import annotations

import time

from harness.profile.head_start import NcuOutputWatch


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
        return {"to_first_pass_s": round(self._replay - self._turn, 3),
                "passes_s": round(self._gone - self._replay, 3),
                "report_s": round(end - self._gone, 3)}
