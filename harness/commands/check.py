"""`ncuh check`: a project checked without a GPU, every problem at once, one line each.

It loads the project (every problem of the file at once), checks every callable's signature
against its role, every `kernel =` against its source and the parameters each kernel uses,
compiles every NVRTC variant for the target architecture where NVRTC is installed, and runs the
project's Python on the CPU with stand-ins for the GPU (`harness.dryrun`). Problems are errors
(exit 2); warnings and notes (what could not run without a GPU library) leave the exit 0.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import NamedTuple

import click

from harness.commands.options import open_chosen_project, project_option
from harness.errors import ProjectError, error_line, printable
from harness.gpu import (
    DEFAULT_ARCH,
    compile_variants,
    find_nvrtc,
    kernel_problems,
    nvrtc_install_hint,
    parameter_problems,
)
from harness.project import Project, signature_problems, variants_named


class Found(NamedTuple):
    """What `ncuh check` finds before it runs the project: problems and notes, one line
    each, and the variants it did not compile."""

    problems: list[str]
    notes: list[str]
    uncompiled: tuple[str, ...] = ()


def project_problems(project: Project, arch: str, compile: bool = True) -> Found:
    """Every problem `ncuh check` finds in `project` before running it ([] when none)."""
    problems = signature_problems(project)
    to_compile = []
    for variant in project.variants:
        try:
            found = kernel_problems(project, variant)
            problems += found + parameter_problems(project, variant)
        except ProjectError as error:  # a source that cannot be read: once per source
            problems += [line for line in error.problems if line not in problems]
            continue
        if not found:
            to_compile.append(variant)
    nvrtc = find_nvrtc() if compile else None
    if nvrtc is None:
        return Found(problems, [])
    compiled = compile_variants(project, to_compile, nvrtc, arch)
    failed: dict[str, list[str]] = {}  # an error -> the variants it stops
    for name, errors in compiled.problems.items():
        for error in errors:
            failed.setdefault(error, []).append(name)
    problems += [f"{variants_named(names)}: {error}" for error, names in failed.items()]
    notes = []
    if compiled.skipped:
        shown = ", ".join(compiled.skipped[:3]) + (", ..." if len(compiled.skipped) > 3 else "")
        notes.append(f"{len(compiled.skipped)} variant(s) not compiled ({shown}): `ncuh check` "
                     f"compiles at most {compiled.limit} distinct programs (sources and their "
                     "macros); each of the rest compiles when it runs")
    return Found(problems, notes, compiled.skipped)


def _ran(found: object, project: Project) -> str:
    """What the dry run ran, in one line."""
    ran = getattr(found, "ran", ())
    variants = sum(1 for item in ran if item.startswith("variant "))
    parts = [f"inputs at {len(getattr(found, 'sizes', ()))} size(s)" if "inputs" in ran else ""]
    parts += [item for item in ran if not item.startswith("variant ") and item != "inputs"]
    parts.append(f"{variants} of {len(project.variants)} variant(s)")
    return ("ran on the CPU, NumPy in place of the GPU: "
            + ", ".join(part for part in parts if part))


@click.command("check", short_help="Check the project without a GPU (compile, dry run).")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, metavar="sm_XX",
              help="The architecture NVRTC compiles every variant for (but one that names "
                   "its own `arch`, such as sm_90a), and whose limits every launch is held "
                   "to.")
@click.option("--compile/--no-compile", "compile_", default=True, show_default=True,
              help="Compile every NVRTC variant (needs the nvidia-cuda-nvrtc wheel or a CUDA "
                   "toolkit; no GPU).")
@click.option("--run/--no-run", "run", default=True, show_default=True,
              help="Run the project's Python (inputs, expected, the reference, each launch) "
                   "on the CPU with NumPy in place of the GPU.")
@project_option
def check(arch: str, compile_: bool, run: bool, project: Path | None) -> None:
    """Check the project without a GPU: the project file (every problem at once),
    signatures, kernels, parameters, an NVRTC compile of every variant, and a dry run of the
    project's Python on the CPU. Exit 2 and one line per problem when anything is wrong."""
    try:
        loaded = open_chosen_project(project)
    except ProjectError as error:
        for line in error.problems:
            click.echo(error_line(line), err=True)
        if len(error.problems) > 1:
            click.echo(f"ncuh: {len(error.problems)} problem(s) in the project file", err=True)
        raise SystemExit(2) from None
    nvrtc = find_nvrtc() if compile_ else None
    click.echo(printable(f"project: {loaded.name} ({loaded.path})"))
    compiled = [v for v in loaded.variants if v.source]
    if nvrtc is not None:
        click.echo(printable(f"compiler: {nvrtc.description}, --gpu-architecture={arch}"))
    elif compile_ and compiled:
        click.echo(f"note: NVRTC not found, variants not compiled: install ncuh's nvrtc extra "
                   f"({nvrtc_install_hint()})", err=True)
    problems, notes, uncompiled = project_problems(loaded, arch, compile=nvrtc is not None)
    for note in notes:
        click.echo(printable(f"note: {note}"), err=True)
    warnings: tuple[str, ...] = ()
    if run:
        from harness.dryrun import dry_run

        found = dry_run(loaded, arch)
        click.echo(printable(_ran(found, loaded)))
        for note in found.notes:
            click.echo(printable(f"note: {note}"), err=True)
        problems += found.problems
        warnings = found.warnings
    for warning in warnings:
        click.echo(printable(f"ncuh: warning: {warning}"), err=True)
    for problem in problems:
        click.echo(error_line(problem), err=True)
    if problems:
        click.echo(printable(f"ncuh: {len(problems)} problem(s) in {loaded.path}"), err=True)
        raise SystemExit(2)
    compiled = [v for v in compiled if v.name not in uncompiled]
    # "4 compiled for sm_90", or with variants that name their own target
    # "3 compiled for sm_90, 1 compiled for sm_90a"
    targets = Counter(v.arch or arch for v in compiled) or Counter({arch: 0})
    done = "".join(f", {count} compiled for {target}" for target, count in
                   sorted(targets.items(), key=lambda item: item[0] != arch)) \
        if nvrtc is not None else ""
    warned = f", {len(warnings)} warning(s)" if warnings else ""
    click.echo(f"ok: {len(loaded.variants)} variant(s) checked{done}{warned}")
