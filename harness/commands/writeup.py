"""`ncuh writeup SOURCE...`: iteration pages (Markdown and HTML) from runs or reports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from harness.commands.options import out_option, project_path
from harness.errors import printable
from harness.util import refuse_input_folders


def _default_out() -> Path:
    # Under runs/ (ignored in a checkout, like bench's and profile's output), never inside a
    # tracked folder.
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"writeup-{stamp}"


# Runs are data: only a project the user names here is loaded, which runs its Python module.
WRITEUP_PROJECT_HELP = (
    "Load this project file (or its folder) for the chain's titles, strategies and reference, "
    "running its module. Without it nothing is loaded or imported: not the project a run's "
    "manifest names, not $NCUH_PROJECT, not an ncuh.toml found from here; the pages use what "
    "each run's manifest records.")


@click.command("writeup", short_help="Write iteration pages (Markdown and HTML) from runs.")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@out_option("Directory for index.md/index.html, one page per kernel, and plots/; the pages "
            "are written as one set (all or none), the index last [default: "
            "runs/writeup-<UTC time>].")
@click.option("--format", "fmt", type=click.Choice(["md", "html", "both"]), default="both",
              show_default=True, help="Markdown for GitHub, self-contained HTML, or both.")
@click.option("--project", "project", type=click.Path(path_type=Path), default=None,
              metavar="PATH", help=WRITEUP_PROJECT_HELP)
def writeup(sources: tuple[Path, ...], out: Path | None, fmt: str,
            project: Path | None) -> None:
    """Write one page per kernel of each SOURCE (a run directory or an .ncu-rep file) and an
    index page with the chain table and plots. A program's run (`profile --top`), given
    alone, gets its ranking as the index and a page per profiled kernel (per process where
    several ran). A SOURCE may also be bench results (`ncuh bench
    --out` output: a bench.json or its folder), whose timings serve the pages of runs profiled
    without --bench.

    Run directories and reports are data: writeup never imports a module they name or
    carry, and only --project (here or as `ncuh --project`) runs a project's code.
    """
    from harness.pages import plot_workers

    # the plot workers are forked first, before any report is opened (and before the pages'
    # own imports, which they do not need), to import matplotlib while the reports are read
    with plot_workers() as workers:
        from harness.pages import collect, ranked_run, write

        out = out or _default_out()
        refuse_input_folders(out, sources)
        program = ranked_run(list(sources))  # a program's run (profile --top): its own pages
        if program is not None:
            result, rendered = _program_pages(program, out, fmt)
        else:
            result = collect(sources, project_path(project))
            rendered = write(result, out, fmt, workers)  # type: ignore[arg-type]
    click.echo(printable(f"wrote {len(result.pages)} page(s), {len(rendered.files)} file(s) "
                         f"under {out}"))
    for path in rendered.files:
        if path.name.startswith("index."):
            click.echo(printable(f"  {path}"))


def _program_pages(run: Any, out: Path, fmt: str) -> tuple[Any, Any]:
    """Each process's ranking and its kernels' pages (`harness.pages.program`)."""
    from harness.pages import collect_program, write_program

    result = collect_program(run)
    return result, write_program(result, out, fmt)  # type: ignore[arg-type]
