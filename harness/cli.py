"""The `ncuh` command line: a thin layer over the library.

Each command lives in its own module under `harness.commands` and is imported only when it
runs, so `ncuh export` does not pay for matplotlib or CuPy. Every expected failure is an
`NcuhError`: one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import gc
import importlib
import signal
import sys
from pathlib import Path
from typing import Any

import click

from harness import __version__
from harness.commands import PROJECT_HELP
from harness.errors import NcuhError, error_line
from harness.util import cache_switch_note, terminate_as_interrupt, usable_cores

# command name -> "module:attribute"; the order is the order of `ncuh --help`.
COMMANDS: dict[str, str] = {
    "init": "harness.commands.init:init",
    "list": "harness.commands.list_variants:list_variants",
    "check": "harness.commands.check:check",
    "bench": "harness.commands.bench:bench",
    "profile": "harness.commands.profile:profile",
    "merge": "harness.commands.merge:merge",
    "export": "harness.commands.export:export",
    "report": "harness.commands.report:report",
    "writeup": "harness.commands.writeup:writeup",
    "diff": "harness.commands.diff:diff",
    "history": "harness.commands.history:history",
}
# Each command's short help, which `ncuh --help` lists without importing the commands
# (tests/test_cli_grammar.py keeps each the command's own).
SHORT_HELP: dict[str, str] = {
    "init": "Write a small working project to start from.",
    "list": "List the project's variants, reference and limits.",
    "check": "Check the project without a GPU (compile, dry run).",
    "bench": "Check every variant's output, then time it.",
    "profile": "Profile variants (or a program) under Nsight Compute.",
    "merge": "Join run directories (shards) into one.",
    "export": "Export every metric of a report or a run as CSV or JSON.",
    "report": "Print each kernel's sections and ncu's rules.",
    "writeup": "Write iteration pages (Markdown and HTML) from runs.",
    "diff": "Compare two runs: regressions, explained; exit 0/1/2.",
    "history": "Keep runs by commit; trends, steps and a gate.",
}


def _kill_children() -> None:
    """Kill the process groups of children still running, where a command started any."""
    processes = sys.modules.get("harness.profile.processes")
    if processes is not None:
        processes.kill_running()


# a group named without a command shows its help (click 8.2 on), which is no error line
_HELP_ASKED = getattr(click.exceptions, "NoArgsIsHelpError", ())


def show_usage_error(error: click.UsageError) -> None:
    """A usage error (an unknown option, a bad value, a missing argument) as the one line every
    other error is: what is wrong, and where help is."""
    if isinstance(error, _HELP_ASKED):
        error.show()
        return
    message = " ".join(error.format_message().split())
    path = error.ctx.command_path if error.ctx is not None else "ncuh"
    click.echo(error_line(f"{path}: {message} (see '{path} --help')"), err=True)


class LazyGroup(click.Group):
    """A click group that imports each command's module on first use."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as error:  # `ncuh --bogus`: before any command runs
            show_usage_error(error)
            sys.exit(error.exit_code)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, SHORT_HELP[name]) for name in COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not gc.isenabled():
            # The executable put the collector off for start-up (`harness.entry`): that is
            # over once the command is loaded. What start-up made stays, so later
            # collections need not walk it again; what a command makes (report models,
            # pages) mostly lives until it ends, so the young generation is collected every
            # 50,000 allocations rather than every 700.
            gc.freeze()
            gc.set_threshold(50_000, *gc.get_threshold()[1:])
            gc.enable()
        return command

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        # SIGTERM/SIGHUP become an exception like Ctrl-C, so every command's cleanup runs
        # (temporary outputs, staging folders, children) and it exits with 128 + the signal.
        try:
            with terminate_as_interrupt():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            _kill_children()
            click.echo("ncuh: interrupted", err=True)
            ctx.exit(128 + signal.SIGINT)
        except SystemExit:
            _kill_children()
            raise
        except NcuhError as error:
            click.echo(error_line(error), err=True)
            ctx.exit(error.exit_code)
        except click.UsageError as error:
            show_usage_error(error)
            ctx.exit(error.exit_code)
        except BrokenPipeError:
            # `ncuh export r.ncu-rep | head` closes stdout early: not an error.
            sys.stderr.close()
            ctx.exit(0)
        except OSError as error:
            # The environment, not a bug (a path too long to look up, a vanished file):
            # one line like every other expected failure.
            where = f"{error.filename}: " if error.filename else ""
            click.echo(error_line(f"{where}{error.strerror or error}"), err=True)
            ctx.exit(2)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ncuh")
@click.option("--project", type=click.Path(path_type=Path), default=None, metavar="PATH",
              help=PROJECT_HELP)
@click.pass_context
def main(ctx: click.Context, project: Path | None) -> None:
    """ncuh: run kernel variants under Nsight Compute, explain the reports, gate regressions."""
    ctx.obj = {"project": project}
    usable_cores()  # a bad $NCUH_JOBS is refused before any command starts its work
    note = cache_switch_note()
    if note:
        click.echo(f"ncuh: {note}", err=True)


if __name__ == "__main__":  # `python -m harness.cli ...` (`python -m harness`: harness.entry)
    main()
