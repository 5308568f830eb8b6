"""Where an entry's seconds go: to its first replay pass, through its passes, to its report.

ncu's output says when the kernel's replay begins (`==PROF== Profiling "kernel" ...`) and when
the program has left it (`==PROF== Disconnected from process N`, after the last pass, before
the report is written). Timed as each piece of output came (not as it was handed over: a
head-started ncu's output waits for its turn, and a fresh one's for ncuh's own work at its
start), they split an entry's `seconds`, which count from its turn, in three (the manifest's
`phases`):

* `to_first_pass_s`: what came before the first replay pass. For a target that paid its own
  start, that start (ncu, Python, the imports, the compile, the check, the warm-up); for one
  started early (`harness.profile.head_start`), what its head start left of its check and
  warm-up. Below zero where its passes began before its turn (while the ncu ahead of it still
  wrote its report);
* `passes_s`: from the first replay pass to the program's exit: the passes with their saves
  and restores, then the runner's own end (0.1-0.25 s on an H100);
* `report_s`: ncu writing the report and exiting.

So a target that takes longer beside another (`--gpus`) or after a change says which part
grew. Only for ncuh's own runner, which profiles one launch in one process, and where that
process runs once (`head_start.HEAD_START_REPLAY_MODES`): a user's program may start several
processes and run between its kernels, and with `application` replay each pass runs it again.
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
