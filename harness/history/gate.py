"""`ncuh history check`: does the newest run open a regression step against its series?

For every kernel of the newest run, the runs before it (up to `--since`'s run, if given) on
the same GPU model form the baseline. Their own steps are found first, so the newest run is
held against the level the series settled at since its last step, not against an old one.
The newest run and that level are then judged and explained by diff itself, and the result
is a `DiffResult`: diff's Markdown, JSON and JUnit renderers print it unchanged.
"""

from __future__ import annotations

from pathlib import Path

from harness.diff import (
    DiffResult,
    Direction,
    Environment,
    KernelData,
    KernelDiff,
    Side,
    Thresholds,
)
from harness.history.changes import STEP_PCT, kernel_diff, step_thresholds, time_rule
from harness.history.record import StoredRun
from harness.history.series import Series, build_series, series_key
from harness.history.steps import CONTEXT_RUNS, Point, find_steps
from harness.history.store import HistoryError


def check_runs(runs: list[StoredRun], thresholds: Thresholds, since: str | None = None,
               step_pct: float = STEP_PCT) -> DiffResult | None:
    """The newest run against its series; None when there is no earlier run to judge by."""
    thresholds = step_thresholds(thresholds, step_pct)
    if not runs:
        raise HistoryError("the history store holds no run to check")
    newest = runs[-1]
    earlier = runs[:-1]
    if since is not None:
        earlier = earlier[:_last_at(earlier, since) + 1]
    earlier = [r for r in earlier if r.gpu == newest.gpu]
    if not earlier:
        return None
    series = {s.key: s for s in build_series(earlier)}
    rule = time_rule(thresholds)
    compared: list[KernelDiff] = []
    added: list[KernelData] = []
    for kernel in newest.kernels:
        if kernel.time_ms is None:
            continue
        history = series.get(series_key(newest, kernel))
        if history is None:
            added.append(kernel.kernel_data())
            continue
        points = _settled(history, rule.threshold_pct, rule.direction, thresholds)
        newest_point = [Point(kernel.time_ms, kernel.samples_ms)]
        compared.append(kernel_diff(history.kernels[-1], points, kernel, newest_point,
                                    thresholds, (f"runs up to {history.runs[-1].short_commit}",
                                                 f"run at {newest.short_commit}")))
    last = earlier[-1]
    # a kernel with a history that failed in the newest run fails the check, as in diff
    broken = tuple(f for f in newest.failed
                   if any(key.name == f.key.name and key.size == f.key.size for key in series))
    current_names = {k.key for k in newest.kernels}
    broken_names = {(f.key.name, f.key.size) for f in broken}
    removed = tuple(k.kernel_data() for k in last.kernels  # a broken kernel is listed once
                    if k.key not in current_names and k.time_ms is not None
                    and (k.name, k.size) not in broken_names)
    compared.sort(key=lambda k: (k.severity(), k.key.name, k.key.size or (), k.key.ordinal))
    base_side = Side(path=Path(f"history {earlier[0].short_commit}..{last.short_commit}"),
                     kind="run", environment=_environment(last),
                     kernels=tuple(k.baseline for k in compared))
    cur_side = Side(path=Path(newest.short_commit), kind="run",
                    environment=_environment(newest),
                    kernels=tuple(k.current for k in compared))
    return DiffResult(base_side, cur_side, tuple(compared), tuple(added), removed, (),
                      thresholds, broken)


def unjudged(runs: list[StoredRun], thresholds: Thresholds) -> DiffResult:
    """The newest run when there is nothing to judge it by (`check_runs` gave None), as diff
    shows kernels of one side only: every one of its kernels added, nothing compared (exit
    0). JSON and JUnit readers then get a document of their own format."""
    newest = runs[-1]
    base_side = Side(path=Path(f"history (no earlier run on {newest.gpu or 'this GPU'})"),
                     kind="run", environment=_environment(newest), kernels=())
    kernels = tuple(k.kernel_data() for k in newest.kernels if k.time_ms is not None)
    cur_side = Side(path=Path(newest.short_commit), kind="run",
                    environment=_environment(newest), kernels=kernels)
    return DiffResult(base_side, cur_side, (), kernels, (), (), thresholds)


def _settled(history: Series, threshold_pct: float, direction: Direction,
             thresholds: Thresholds) -> list[Point]:
    """The points since the series' last confirmed step (at most CONTEXT_RUNS of them)."""
    points = history.points()
    steps = find_steps(points, threshold_pct, direction, thresholds.timing)
    start = steps[-1].index if steps else 0
    return points[max(start, len(points) - CONTEXT_RUNS):]


def _last_at(runs: list[StoredRun], ref: str) -> int:
    """Index of the last run whose commit starts with `ref` (a SHA or a prefix of one)."""
    needle = ref.strip().lower()
    for index in range(len(runs) - 1, -1, -1):
        if needle and runs[index].commit.lower().startswith(needle):
            return index
    raise HistoryError(f"--since {ref}: no earlier run at that commit in the history store")


def _environment(run: StoredRun) -> Environment:
    return Environment(gpu=run.gpu, compute_capability=run.compute_capability,
                       ncu_version=run.ncu_version)
