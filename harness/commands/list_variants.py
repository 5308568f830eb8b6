"""`ncuh list`: the project's chain in order, as text or JSON. Needs no GPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from harness.commands.options import open_chosen_project, project_option
from harness.errors import printable
from harness.project import Project


def project_record(project: Project) -> dict[str, Any]:
    """The whole project as JSON: what it is, where it is, its reference and its chain."""
    return {
        "project": project.name,
        "path": str(project.path),
        "description": project.description,
        "dims": list(project.dims),
        "default_sizes": [str(s) for s in project.default_sizes],
        "profile_size": str(project.profile_size),
        "reference": project.reference.name if project.reference else None,
        "limits": [limit.name for limit in project.limits],
        "variants": [variant.to_dict() for variant in project.variants],
    }


def format_params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def format_text(project: Project) -> str:
    records = [variant.to_dict() for variant in project.variants]
    rows = [("#", "name", "title", "previous", "params")]
    rows += [
        (
            str(r["iteration"]),
            r["name"],
            r["title"],
            r["previous"] or "-",
            format_params(r["params"]) + (" (tuned per GPU and size)" if r["tunable"] else ""),
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [f"{row[0]:>{widths[0]}}", *(f"{c:<{widths[i + 1]}}" for i, c in
                                              enumerate(row[1:4])), row[4]]
        lines.append("  ".join(cells).rstrip())
    extras = [f"project: {project.name} ({project.path})"]
    extras += [f"reference: {project.reference.name}"] if project.reference else []
    extras += [f"limit: {limit.name}" for limit in project.limits]
    lines += extras
    return "\n".join(lines) + "\n"


@click.command("list", short_help="List the project's variants, reference and limits.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@project_option
def list_variants(fmt: str, project: Path | None) -> None:
    """List the project's variants in chain order, then its reference and limits."""
    loaded = open_chosen_project(project)
    if fmt == "json":
        click.echo(json.dumps(project_record(loaded), indent=2))
    else:
        click.echo(printable(format_text(loaded), keep_lines=True), nl=False)
