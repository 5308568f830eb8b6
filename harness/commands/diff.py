"""`ncuh diff BASELINE CURRENT`: did anything get slower, and why? Exit 0, 1 or 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from harness.commands.options import out_option
from harness.errors import ReportError, printable
from harness.util import atomic_write_text, holds_bad_text, refuse_inputs

FORMATS = ("md", "json", "junit")


@click.command(context_settings={"help_option_names": ["-h", "--help"]},
               short_help="Compare two runs: regressions, explained; exit 0/1/2.")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option("--config", "config", type=click.Path(path_type=Path), default=None,
              help="Thresholds TOML, merged over harness/diff/default_thresholds.toml.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="md", show_default=True,
              help="md: GitHub job summary; json: schema ncuh.diff/1; junit: JUnit XML.")
@out_option("Write here (atomically) instead of stdout; the status line goes to stdout. A "
            "symbolic link is written through; an existing file keeps its permissions.")
@click.option("--pair", "pairs", multiple=True, metavar="BASE_KERNEL=CURRENT_KERNEL",
              help="Compare a renamed kernel: baseline name = current name. Repeatable.")
@click.option("--allow-mismatch", is_flag=True,
              help="Compare even when GPU, compute capability or ncu version differ.")
@click.option("--allow-no-match", is_flag=True,
              help="Exit 0 even when no kernel of one side pairs with one of the other "
                   "(otherwise nothing was compared: exit 2).")
def diff(baseline: Path, current: Path, config: Path | None, fmt: str, out: Path | None,
         pairs: tuple[str, ...], allow_mismatch: bool, allow_no_match: bool) -> None:
    """Compare CURRENT against BASELINE (run directories or .ncu-rep reports).

    Exit status: 0 nothing regressed, 1 a kernel regressed, 2 bad or incompatible input.
    """
    from harness.diff import diff_runs

    if out is not None:
        from harness.rundir import is_run_directory, run_inputs

        refuse_inputs(out, [file for side in (baseline, current)
                            for file in (run_inputs(side) if is_run_directory(side) else [side])]
                      + ([config] if config is not None else []))
    result = diff_runs(baseline, current, config=config, pairs=pairs,
                       allow_mismatch=allow_mismatch, allow_no_match=allow_no_match)
    for side in (result.baseline, result.current):
        if holds_bad_text(side.kernels) or holds_bad_text(side.failed):
            raise ReportError(f"{side.path} is corrupt: it holds text that is not UTF-8")
    emit(result, fmt, out)


def emit(result, fmt: str, out: Path | None) -> NoReturn:  # type: ignore[no-untyped-def]
    """Print `result` in `fmt` (or write it to `out` and print the status line); exit with its
    code. `ncuh history check` reads like a diff and ends the same way."""
    from harness.diff import status_line

    text = _render(result, fmt)
    if out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(out, text)
        click.echo(printable(status_line(result)))
    sys.exit(result.exit_code)


def _render(result, fmt: str) -> str:  # type: ignore[no-untyped-def]
    if fmt == "json":
        from harness.diff import render_json
        return render_json(result)
    if fmt == "junit":
        from harness.diff import render_junit
        return render_junit(result)
    from harness.diff import render_markdown
    return render_markdown(result)
