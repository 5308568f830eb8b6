"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from harness.project import Project

F = TypeVar("F", bound=Callable[..., Any])

PROJECT_HELP = ("The project file (ncuh.toml, or a pyproject.toml with [tool.ncuh]) or its "
                "folder [default: $NCUH_PROJECT, else found from the current directory "
                "upwards, else the bundled project].")


def project_option(function: F) -> F:
    """`--project PATH` on a command; `ncuh --project PATH COMMAND` sets it for every command."""
    return click.option("--project", "project", type=click.Path(path_type=Path), default=None,
                        metavar="PATH", help=PROJECT_HELP)(function)


def project_path(value: Path | None) -> Path | None:
    """The command's --project, else the group's, else None (discovery decides)."""
    if value is not None:
        return value
    context = click.get_current_context(silent=True)
    root = context.find_root() if context is not None else None
    return (root.obj or {}).get("project") if root is not None else None


def open_chosen_project(value: Path | None) -> Project:
    # Imported here: export, report and diff share these options and never load a project
    # (nor pydantic).
    from harness.project import open_project

    return open_project(project_path(value))
