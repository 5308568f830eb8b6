"""`add_runs`: read run directories and record each at its commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.history.record import read_run
from harness.history.rows import oversized
from harness.history.store import AddOutcome, HistoryError, Store
from harness.history.vcs import resolve_commit


def add_runs(store: Store, paths: Sequence[Path | str], commit: str | None = None,
             branch: str | None = None, tag: str | None = None,
             env: Mapping[str, str] | None = None) -> list[AddOutcome]:
    """Record each run (each in its own transaction); every run is read, its commit known and
    its project checked before any is added, so a bad run directory among several adds none of
    them (and a store still to be made is not made)."""
    records = [read_run(path) for path in paths]
    held = store.project()  # a store belongs to one project: the first run naming one claims it
    for record in records:
        held = held or record.project
        if record.project is not None and record.project != held:
            raise HistoryError(f"{record.source}: a run of project {record.project!r}, but "
                               f"history store {store.name} belongs to project {held!r}")
    commits = []
    for record in records:
        sha, ref = resolve_commit(commit, branch, record.git_commit, Path.cwd(), env)
        if not sha:
            raise HistoryError(f"{record.source}: no commit known for this run (not in a git "
                               "checkout, no CI variables): pass --commit")
        problem = oversized(record, sha, ref, tag)
        if problem is not None:
            raise HistoryError(problem)
        commits.append((sha, ref))
    return [store.add(record, sha, ref, tag) for record, (sha, ref) in zip(records, commits,
                                                                          strict=True)]
