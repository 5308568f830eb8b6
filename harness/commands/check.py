"""`ncuh check`: a project checked without a GPU, every problem at once, one line each.

It loads the project (the loader's checks), then checks every callable's signature against
its role, every `kernel =` against its source, the parameters each kernel uses, and compiles
every NVRTC variant with NVRTC for the target architecture where NVRTC is installed. Exit 2
when anything is wrong, 0 with a short summary otherwise.
"""

from __future__ import annotations

from pathlib import Path

import click

from harness.commands.options import open_chosen_project, project_option
from harness.errors import error_line, printable
from harness.gpu import (
    DEFAULT_ARCH,
    compile_problems,
    find_nvrtc,
    kernel_problems,
    nvrtc_install_hint,
    parameter_problems,
)
from harness.project import Project, signature_problems


def project_problems(project: Project, arch: str, compile: bool = True) -> list[str]:
    """Every problem `ncuh check` finds in `project`, one line each ([] when none)."""
    problems = signature_problems(project)
    nvrtc = find_nvrtc() if compile else None
    compiled: dict[str, list[str]] = {}  # an error -> the variants it stops
    for variant in project.variants:
        found = kernel_problems(project, variant)
        problems += found
        problems += parameter_problems(project, variant)
        if nvrtc is not None and not found:
            for error in compile_problems(project, variant, nvrtc, arch):
                compiled.setdefault(error, []).append(repr(variant.name))
    for error, names in compiled.items():
        problems.append(f"variant{'s' if len(names) > 1 else ''} {', '.join(names)}: {error}")
    return problems


@click.command("check", short_help="Check the project without a GPU (NVRTC compile).")
@click.option("--arch", default=DEFAULT_ARCH, show_default=True, metavar="sm_XX",
              help="The architecture NVRTC compiles every variant for.")
@click.option("--compile/--no-compile", "compile_", default=True, show_default=True,
              help="Compile every NVRTC variant (needs the nvidia-cuda-nvrtc wheel or a CUDA "
                   "toolkit; no GPU).")
@project_option
def check(arch: str, compile_: bool, project: Path | None) -> None:
    """Check the project without a GPU: signatures, kernels, parameters, and an NVRTC compile
    of every variant. Exit 2 and one line per problem when anything is wrong."""
    loaded = open_chosen_project(project)
    nvrtc = find_nvrtc() if compile_ else None
    click.echo(printable(f"project: {loaded.name} ({loaded.path})"))
    compiled = [v for v in loaded.variants if v.source]
    if nvrtc is not None:
        click.echo(printable(f"compiler: {nvrtc.description}, --gpu-architecture={arch}"))
    elif compile_ and compiled:
        click.echo(f"note: NVRTC not found, variants not compiled: install ncuh's nvrtc extra "
                   f"({nvrtc_install_hint()})", err=True)
    problems = project_problems(loaded, arch, compile=nvrtc is not None)
    for problem in problems:
        click.echo(error_line(problem), err=True)
    if problems:
        click.echo(printable(f"ncuh: {len(problems)} problem(s) in {loaded.path}"), err=True)
        raise SystemExit(2)
    done = f", {len(compiled)} compiled for {arch}" if nvrtc is not None else ""
    click.echo(f"ok: {len(loaded.variants)} variant(s) checked{done}")
