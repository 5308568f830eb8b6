"""`ncuh writeup SOURCE...`: iteration pages (Markdown and HTML) from runs or reports."""

from __future__ import annotations

from pathlib import Path

import click

from harness.commands.options import project_option, project_path


@click.command("writeup")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path),
              default=Path("reports/writeup"), show_default=True,
              help="Directory for index.md/index.html, one page per kernel, and plots/; "
                   "the pages are written as one set (all or none), the index last.")
@click.option("--format", "fmt", type=click.Choice(["md", "html", "both"]), default="both",
              show_default=True, help="Markdown for GitHub, self-contained HTML, or both.")
@project_option
def writeup(sources: tuple[Path, ...], out: Path, fmt: str, project: Path | None) -> None:
    """Write one page per kernel of each SOURCE (a run directory or an .ncu-rep file) and an
    index page with the chain table and plots."""
    from harness.pages import collect, write

    result = collect(sources, project_path(project))
    rendered = write(result, out, fmt)  # type: ignore[arg-type]
    click.echo(f"wrote {len(result.pages)} page(s), {len(rendered.files)} file(s) under {out}")
    for path in rendered.files:
        if path.name.startswith("index."):
            click.echo(f"  {path}")
