"""`ncuh history add|show|check`: keep every run, show trends, gate on the series."""

from __future__ import annotations

from pathlib import Path

import click

from harness.commands.options import (
    FiniteFloatRange,
    kernel_option,
    out_option,
    project_option,
    project_path,
)
from harness.errors import printable

FORMATS = ("md", "json", "junit")
STEP_RANGE = FiniteFloatRange(min=0.1, max=1000.0)  # percent
STORE_HELP = ("The store: an SQLite file or a postgresql://user@host/db URL [default: "
              "$NCUH_HISTORY, else .ncuh/history.sqlite in the project's folder].")


def store_option(function):  # type: ignore[no-untyped-def]
    return click.option("--store", "store", default=None, metavar="PATH|URL",
                        help=STORE_HELP)(function)


def project_dir(project: Path | None) -> Path:
    """The folder whose .ncuh/ holds the default store: the project's, else the current one
    (the bundled project lives inside the installed package, never a place to write)."""
    from harness.project import bundled_dir, find_project

    found = find_project(project_path(project))
    bundled = bundled_dir().resolve()
    if found.is_relative_to(bundled):
        return Path.cwd()
    return found.parent


@click.group(context_settings={"help_option_names": ["-h", "--help"]},
             short_help="Keep runs by commit; trends, steps and a gate.")
def history() -> None:
    """Keep every run at its commit; trends per kernel; steps found and explained."""


@history.command(context_settings={"help_option_names": ["-h", "--help"]},
                 short_help="Record run directories at a commit.")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--commit", default=None, help="[default: the run's own, CI variables, git HEAD]")
@click.option("--branch", default=None, help="[default: CI variables, else git's branch]")
@click.option("--tag", default=None, help="A free label kept with the runs (e.g. nightly).")
@store_option
@project_option
def add(runs: tuple[Path, ...], commit: str | None, branch: str | None, tag: str | None,
        store: str | None, project: Path | None) -> None:
    """Record run directories in the history store (the same run at the same commit once)."""
    from harness.history import add_runs, open_store

    opened = open_store(store, project_dir(project), create=True)
    try:
        for outcome in add_runs(opened, runs, commit, branch, tag):
            kernels = len(outcome.record.kernels)
            if outcome.status == "added":
                click.echo(printable(f"added {outcome.record.source.name} at "
                                     f"{outcome.commit[:10]} ({_counted(kernels, 'kernel')}) to "
                                     f"{opened.name}"))
            else:
                click.echo(printable(f"unchanged: {outcome.record.source.name} at "
                                     f"{outcome.commit[:10]} is already in {opened.name}"))
    finally:
        opened.close()


@history.command(context_settings={"help_option_names": ["-h", "--help"]},
                 short_help="Write the trend pages (Markdown and HTML).")
@out_option("Folder for index.md, index.html and a page per series.", required=True)
@kernel_option
@click.option("--metric", default=None,
              help="Plot this ncu metric beside time instead of the key counters.")
@click.option("--branch", default=None, help="Only runs recorded on this branch.")
@click.option("--config", type=click.Path(path_type=Path), default=None,
              help="diff's thresholds TOML (the timing threshold of a step).")
@click.option("--step", "step_pct", type=STEP_RANGE, default=2.0,
              show_default=True, metavar="PCT",
              help="The smallest change of time that counts as a step, in percent.")
@store_option
@project_option
def show(out: Path, kernel_regex: str | None, metric: str | None, branch: str | None,
         config: Path | None, step_pct: float, store: str | None, project: Path | None) -> None:
    """Write the trend pages (Markdown and self-contained HTML)."""
    from harness.diff import load_thresholds
    from harness.history import HistoryError, build_trends, open_store, write_trends

    opened = open_store(store, project_dir(project))
    try:
        runs = opened.runs(branch=branch)
    finally:
        opened.close()
    if not runs:
        where = f" on branch {branch}" if branch else ""
        raise HistoryError(f"history store {opened.name} holds no run{where}")
    trends = build_trends(runs, kernel_regex, metric, load_thresholds(config), step_pct)
    write_trends(trends, out)
    steps = sum(len(v.steps) for v in trends.views)
    click.echo(printable(f"wrote {out / 'index.html'} and {out / 'index.md'}: "
                         f"{len(trends.views)} series, {_counted(trends.runs, 'run')}, "
                         f"{_counted(steps, 'step')}"))


@history.command(context_settings={"help_option_names": ["-h", "--help"]},
                 short_help="Exit 1 when the newest run opens a regression step.")
@click.option("--since", default=None, metavar="REF",
              help="Judge the newest run against the series up to this commit (a SHA or "
                   "prefix, e.g. the merge base) instead of up to the run before it.")
@click.option("--branch", default=None, help="Only runs recorded on this branch.")
@click.option("--config", type=click.Path(path_type=Path), default=None,
              help="Thresholds TOML, merged over diff's defaults.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="md", show_default=True,
              help="md: GitHub job summary; json: schema ncuh.diff/1; junit: JUnit XML.")
@out_option("Write here (atomically) instead of stdout; the status line goes to stdout.")
@click.option("--step", "step_pct", type=STEP_RANGE, default=2.0,
              show_default=True, metavar="PCT",
              help="The smallest change of time that counts as a step, in percent.")
@store_option
@project_option
def check(since: str | None, branch: str | None, config: Path | None, fmt: str,
          out: Path | None, step_pct: float, store: str | None, project: Path | None) -> None:
    """Exit 1 when the newest run opens a regression step against its series.

    Exit status: 0 no regression, 1 a regression, 2 bad input or an unusable store.
    """
    from harness.commands.diff import emit
    from harness.diff import load_thresholds
    from harness.history import check_runs, open_store, unjudged
    from harness.util import refuse_inputs

    opened = open_store(store, project_dir(project))
    if out is not None:  # inputs are never written: not the store, not the thresholds
        refuse_inputs(out, [p for p in (opened.file, config) if p is not None])
    try:
        runs = opened.runs(branch=branch)
    finally:
        opened.close()
    thresholds = load_thresholds(config)
    result = check_runs(runs, thresholds, since, step_pct)
    if result is None and fmt == "md":
        click.echo(printable(f"ncuh history check: nothing to judge yet: no earlier run on "
                             f"{runs[-1].gpu or 'this GPU'} in {opened.name}"))
        return
    # JSON and JUnit readers get their own format even with nothing to judge yet
    emit(result or unjudged(runs, thresholds), fmt, out)


def _counted(count: int, noun: str) -> str:
    """1 step, 2 steps."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
