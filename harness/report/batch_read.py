"""Read the reports a command is about to need at once, in forked processes, one per core.

`read_ahead(paths)` reads the reports not yet kept (`harness.report.read_cache`) in this
process and forked children, one per core, each taking the next report, largest first, as it
is free; what they built is handed over (`read_cache.hand_over`) to `load_kernel_reports`,
a child's report as soon as this process has nothing left to read. A process reads reports in
turn: ncu_report's first report in a process costs several times the next ones (its
disassembler and metric tables start), so a process per report would cost more than it saves.
Children are forked only from a process that has opened no report: the disassembler starts a
thread, after which a fork can hang. A report a child could not read is read again by the
command itself, which then says what is wrong.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.report import read_cache
from harness.util import forked, put_index, taken_indices

if TYPE_CHECKING:
    from harness.report.builder import BuiltReport

Wanted = Callable[[str], bool]
SHARE_BYTES = 3 * 1024 * 1024  # the least bytes of reports worth a process of their own
MAX_QUEUE = 16_000  # report indices in one pipe (4 bytes each, a pipe holds 64 KiB)


def read_ahead(paths: Iterable[Path], jobs: int | None = None,
               wanted: Wanted | None = None) -> int:
    """Read the given reports at once, shared between this process and forked children,
    where that can help; return how many were read so (0: none, the command reads them).

    With `wanted`, the processes build summaries (`builder.summarize_report_file`), which are
    handed to `load_kernel_summaries` with the same `wanted` (and kept for `every_metric`)."""
    from harness.report.builder import may_fork

    if not hasattr(os, "fork") or not may_fork():
        return 0
    todo: dict[str, Path] = {}
    for path in paths:
        key = read_cache.report_key(Path(path))
        if key is None or key in todo or read_cache.taken(key) is not None or (
                wanted is not None and read_cache.taken_summaries(key, wanted) is not None):
            continue
        if read_cache.wanted() and (_kept(key) or (
                wanted is not None and _kept(read_cache.summary_key(key)))):
            continue
        todo[key] = Path(path)
    # A process's first report costs it several times what the next ones do (the
    # disassembler, ncu_report's metric tables): a child pays for itself only with a share of
    # a few megabytes of reports to read. At most 8: each holds its reports' models.
    total = sum(_size(path) for path in todo.values())
    jobs = min(jobs or os.cpu_count() or 1, 8, len(todo), total // SHARE_BYTES)
    if jobs < 2:
        return 0
    # largest first: the last reports taken are the small ones, so the processes end together
    # (at most what a pipe holds of their indices: more would be read by the command itself)
    queue = sorted(todo.items(), key=lambda item: -_size(item[1]))[:MAX_QUEUE]
    # reading ahead is optional: no temporary folder, pipe or fork (a full disk, too many
    # processes) leaves every report to the command, which reads it as it always does
    try:
        with tempfile.TemporaryDirectory(prefix="ncuh-read-") as handoff:
            _read_shared(queue, jobs, Path(handoff), wanted)
    except OSError:
        return 0
    return len(todo)


def _read_shared(queue: list[tuple[str, Path]], jobs: int, handoff: Path,
                 wanted: Wanted | None) -> None:
    """Read `queue` in this process and `jobs - 1` forked children, each taking the next report
    as it is free; a child announces each report it kept into `handoff`, which this process
    takes up as soon as it has nothing left to read (a pipe of indices each way)."""
    offered_read, offered = os.pipe()
    announced, announce = os.pipe()
    children: set[int] = set()
    try:
        for _ in range(jobs - 1):
            children.add(forked(_child(queue, offered_read, offered, announced, announce,
                                       handoff, wanted)))
        os.close(announce)
        announce = -1
        for index in range(len(queue)):
            put_index(offered, index)
        os.close(offered)
        offered = -1
        # this process reads too, while the children read: only theirs pay for a second
        # disassembler and for the way back
        for index in taken_indices(offered_read):
            key, path = queue[index]
            built = _built(path, wanted)
            if built is not None:
                _hand_over(key, built.profiles, built.alone, wanted)
        # then what the children kept, each as it is announced; the pipe ends with them
        for index in taken_indices(announced):
            key, _ = queue[index]
            for alone in (True, False):
                entry = read_cache.entry_path(key, handoff / _FOLDERS[alone])
                profiles = read_cache.fetch(key, entry.parent)
                if profiles is not None:
                    _hand_over(key, profiles, alone, wanted, entry)
        for pid in list(children):  # these children only: another's exit status stays its own
            os.waitpid(pid, 0)
            children.discard(pid)
    finally:
        # an interrupt: no child reads on after the command is gone
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        for handle in (offered_read, offered, announced, announce):
            if handle >= 0:
                with contextlib.suppress(OSError):
                    os.close(handle)


def _kept(key: str) -> bool:
    """Whether the cache holds an entry under `key`; False where the cache cannot be read."""
    try:
        return read_cache.entry_path(key).is_file()
    except (OSError, RuntimeError):  # no home directory, a name too long, no permission
        return False


def _built(path: Path, wanted: Wanted | None) -> BuiltReport | None:
    """The report's `BuiltReport` (profiles, or summaries with `wanted`); None where it
    cannot be read (the command reads it again itself and says why)."""
    from harness.report.builder import build_report_file, summarize_report_file

    try:
        return (build_report_file(path) if wanted is None
                else summarize_report_file(path, wanted))
    except Exception:
        return None


def _hand_over(key: str, profiles: list[Any], alone: bool, wanted: Wanted | None,
               entry: Path | None = None) -> None:
    """Hand `profiles` to this process's readers; keep them where they read as alone (the
    entry a child wrote is copied as it is)."""
    from harness.report.builder import kept_name

    read_cache.hand_over(key, profiles, wanted)
    name = kept_name(key, wanted)
    if name is None or not (alone and read_cache.wanted()):
        return
    if entry is not None:
        read_cache.keep_file(name, entry)
    else:
        read_cache.keep(name, profiles)


_FOLDERS = {True: "alone", False: "after-others"}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _child(queue: list[tuple[str, Path]], offered_read: int, offered: int, announced: int,
           announce: int, handoff: Path, wanted: Wanted | None) -> Callable[[], None]:
    """A child's work (`forked`): build each report taken into the hand-off folder and
    announce it, until none is left."""

    def read() -> None:
        os.close(offered)  # else the queue never ends for this child
        os.close(announced)  # the parent's end: a parent gone is then a broken pipe here
        for index in taken_indices(offered_read):
            key, path = queue[index]
            built = _built(path, wanted)
            if built is not None:
                read_cache.keep(key, built.profiles, handoff / _FOLDERS[built.alone])
                put_index(announce, index)

    return read
