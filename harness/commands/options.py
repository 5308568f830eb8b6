"""Options shared by several commands."""

from __future__ import annotations

import math
import re
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


# --- one grammar: the same option names and meanings in every command --------------------

KERNEL_METAVAR = "NAME|regex:EXPR"
KERNEL_HELP = ("Only kernels named NAME exactly, or whose name matches regex:EXPR (a regular "
               "expression, searched): ncu's -k syntax, the same in every command.")
SIZE_HELP = ("Problem size: N for every dimension, or one value per dimension like "
             "4096x2048x1024; 2^26, 1<<20 and 1e6 work too (repeatable)")
SIZES_HELP = "Comma-separated sizes, as --size (repeatable)"


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses nan and infinity (nan passes any bound, as every
    comparison with it is false)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def kernel_pattern(text: str | None) -> str | None:
    """The regular expression (searched) that ncu's `-k` syntax means: `regex:EXPR` is EXPR,
    a plain NAME is that exact name."""
    if text is None:
        return None
    if text.startswith("regex:"):
        return text.removeprefix("regex:")
    return f"^{re.escape(text)}$"


def kernel_option(function: F) -> F:
    """`-k/--kernel NAME|regex:EXPR`, handed to the command as a regular expression."""
    return click.option("-k", "--kernel", "kernel_regex", default=None,
                        metavar=KERNEL_METAVAR, help=KERNEL_HELP,
                        callback=lambda _ctx, _param, value: kernel_pattern(value))(function)


def out_option(help: str, *, default: Any = None, show_default: bool = False,
               file_okay: bool = True, required: bool = False) -> Callable[[F], F]:
    """`-o/--out PATH` on every command that writes (`--output` kept as a hidden alias where
    a command had it: `out_alias_option`)."""
    return click.option("-o", "--out", "out", type=click.Path(file_okay=file_okay,
                                                                path_type=Path),
                        default=default, show_default=show_default, required=required,
                        help=help)


def out_alias_option(function: F) -> F:
    """`--output`, the older spelling of `--out`: accepted, not shown."""
    return click.option("--output", "output_alias", type=click.Path(path_type=Path),
                        default=None, hidden=True)(function)


def size_words(size: tuple[str, ...], sizes: tuple[str, ...]) -> tuple[str, ...]:
    """The size words of --size and --sizes, in order, each once."""
    texts = list(size) + [part for group in sizes for part in group.split(",") if part.strip()]
    return tuple(dict.fromkeys(text.strip() for text in texts))


def size_options(default: str) -> Callable[[F], F]:
    """`--size SIZE` and `--sizes LIST`, both repeatable, the same in bench and profile."""
    def decorate(function: F) -> F:
        function = click.option("--sizes", multiple=True, metavar="LIST",
                                help=f"{SIZES_HELP}.")(function)
        return click.option("--size", multiple=True, metavar="SIZE",
                            help=f"{SIZE_HELP} [default: {default}].")(function)
    return decorate


def complete_variants(ctx: click.Context, _param: click.Parameter,
                      incomplete: str) -> list[str]:
    """Shell completion of --variant: the names of the project the command would open."""
    try:
        chosen = ctx.params.get("project") or (ctx.find_root().params.get("project"))
        from harness.project import open_project

        names = open_project(chosen).names
    except Exception:  # completion must never print a traceback into the user's shell
        return []
    return [name for name in names if name.startswith(incomplete)]


def variant_option(help: str) -> Callable[[F], F]:
    """`--variant NAME` (repeatable), completing the project's variant names."""
    return click.option("--variant", "variant_names", multiple=True, metavar="NAME",
                        help=help, shell_complete=complete_variants)
