"""Read the reports a command is about to need at once, in forked processes, one per core.

`read_ahead(paths)` shares the reports not yet kept (`harness.report.read_cache`) among one
child process per core, the largest first to the least loaded, and hands what they built over
(`read_cache.hand_over`) to `load_kernel_reports`, which the command then calls as it always
does. A child reads its
reports one after another: ncu_report's first report in a process costs about half a second
more than the next ones (its SASS disassembler starts), so one process per report would cost
more than it saves on few cores. What a child built after a report of other metrics is used,
as it would be in one process, but not kept (`BuiltReport.alone`).

Children are forked only from a process that has built no report: the disassembler starts a
thread of its own, after which a fork can hang. (numpy's OpenBLAS threads stop themselves
around a fork.) A report a child could not read is read again by the command itself, which
then says what is wrong with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.report import read_cache

Wanted = Callable[[str], bool]

def read_ahead(paths: Iterable[Path], jobs: int | None = None,
               wanted: Wanted | None = None) -> int:
    """Read the given reports in forked children where that can help; return how many.

    With `wanted`, the children build summaries (`builder.summarize_report_file`), which are
    handed to `load_kernel_summaries` with the same `wanted` (and kept for `every_metric`)."""
    from harness.report.builder import every_metric, may_fork

    if not hasattr(os, "fork") or not may_fork():
        return 0
    todo: dict[str, Path] = {}
    for path in paths:
        key = read_cache.report_key(Path(path))
        if key is None or key in todo or read_cache.taken(key) is not None or (
                wanted is not None and read_cache.taken_summaries(key, wanted) is not None):
            continue
        if read_cache.wanted() and (read_cache.entry_path(key).is_file() or (
                wanted is not None
                and read_cache.entry_path(read_cache.summary_key(key)).is_file())):
            continue
        todo[key] = Path(path)
    # at most 8: each child holds a report's model and starts its own disassembler
    jobs = min(jobs or os.cpu_count() or 1, 8, len(todo))
    if jobs < 2:
        return 0
    with tempfile.TemporaryDirectory(prefix="ncuh-read-") as handoff:
        folder = Path(handoff)
        _run_children(_shares(todo, jobs), folder, wanted)
        for key in todo:
            for alone in (True, False):
                entry = read_cache.entry_path(key, folder / _FOLDERS[alone])
                profiles = read_cache.fetch(key, entry.parent)
                if profiles is None:
                    continue
                read_cache.hand_over(key, profiles, wanted)
                if alone and read_cache.wanted() and wanted in (None, every_metric):
                    read_cache.keep_file(key if wanted is None else read_cache.summary_key(key),
                                         entry)
    return len(todo)


_FOLDERS = {True: "alone", False: "after-others"}


def _shares(todo: dict[str, Path], jobs: int) -> list[list[tuple[str, Path]]]:
    """`jobs` lists of reports of about equal bytes: the largest first, each to the lightest."""
    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return 0

    shares: list[list[tuple[str, Path]]] = [[] for _ in range(jobs)]
    loads = [0] * jobs
    for key, path in sorted(todo.items(), key=lambda item: -size(item[1])):
        lightest = loads.index(min(loads))
        shares[lightest].append((key, path))
        loads[lightest] += size(path)
    return shares


def _run_children(shares: list[list[tuple[str, Path]]], handoff: Path,
                  wanted: Wanted | None) -> None:
    running: set[int] = set()
    try:
        for share in shares:
            pid = os.fork()
            if pid == 0:
                _child(share, handoff, wanted)
            running.add(pid)
        while running:
            pid, _ = os.wait()
            running.discard(pid)
    finally:
        # an interrupt: no child reads on after the command is gone
        for pid in running:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in running:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def _child(share: list[tuple[str, Path]], handoff: Path, wanted: Wanted | None) -> None:
    """Build each report's typed reports into the hand-off folder, then end at once (no
    cleanup of the parent's: its atexit handlers and buffers are not this process's)."""
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        from harness.report.builder import build_report_file, summarize_report_file

        for key, path in share:
            try:
                built = (build_report_file(path) if wanted is None
                         else summarize_report_file(path, wanted))
                profiles, alone = built.profiles, built.alone
            except Exception:  # the command reads it again itself and says why
                continue
            read_cache.keep(key, profiles, handoff / _FOLDERS[alone])
    finally:
        os._exit(0)
