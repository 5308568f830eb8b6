"""`ncuh profile`: run variants, or any program, under Nsight Compute into a run directory."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from harness.commands.options import (
    KERNEL_HELP,
    KERNEL_METAVAR,
    out_option,
    project_option,
    project_path,
    size_options,
    size_words,
    variant_option,
)
from harness.errors import NcuhError, printable
from harness.profile import (
    CLOCK_CONTROLS,
    DEFAULT_SET,
    GRAPH_PROFILING,
    SETS,
    KernelFilter,
    NcuSettings,
)
from harness.util import load_json


def _params(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    value = load_json(text, "--params", NcuhError)
    if not isinstance(value, dict):
        raise NcuhError("--params must be a JSON object, e.g. '{\"BM\": 64}'")
    return value


@click.command(context_settings={"help_option_names": ["-h", "--help"]},
               short_help="Profile variants (or a program) under Nsight Compute.")
@variant_option("A variant to profile (repeatable); see `ncuh list`.")
@click.option("--all", "all_variants", is_flag=True, help="Every variant of the chain, in order.")
@size_options("the project's profile_size")
@click.option("--set", "section_set", type=click.Choice(SETS), default=DEFAULT_SET,
              show_default=True,
              help="ncu section set; 'pages': what the pages, findings and diff read (fewer "
                   "passes than 'full').")
@click.option("--section", "sections", multiple=True, metavar="ID",
              help="Extra ncu section (repeatable).")
@click.option("--metrics", multiple=True, metavar="LIST",
              help="Extra metrics, comma-separated (repeatable).")
@click.option("--clock-control", type=click.Choice(CLOCK_CONTROLS), default="base",
              show_default=True, help="ncu --clock-control.")
@click.option("--import-source/--no-import-source", default=True, show_default=True,
              help="ncu --import-source: copy the CUDA sources the line info names into the "
                   "report, so the pages show them in place (read as text, never run).")
@click.option("--params", "params_json", default=None, metavar="JSON",
              help="Tunable parameters for the variants, a JSON object.")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
              help="Launches before the profiled one.")
@click.option("--capture", type=click.Choice(("auto", "nvtx", "kernel")), default="auto",
              show_default=True, help="How ncu finds the runner's launch: NVTX range or count.")
@click.option("--bench", is_flag=True, help="Also time the variants (bench.json).")
@click.option("--bench-sizes", "bench_sizes", multiple=True, metavar="LIST",
              help="Sizes to time with --bench (default: the profiled sizes); implies --bench.")
@out_option("Where run directories go.", default=Path("runs"), show_default=True,
            file_okay=False)
@click.option("--dry-run", is_flag=True, help="Print the ncu command lines and exit.")
@click.option("--gpus", default=None, metavar="all|0,1,…",
              help="Profile on these GPUs at once, one ncu per GPU (nvidia-smi indexes).")
@click.option("--allow-mismatch", is_flag=True, help="Let --gpus mix GPU models.")
@click.option("--metrics-csv/--no-metrics-csv", default=False, show_default=True,
              help="Also write metrics.csv, every report's metrics in one table; its last "
                   "part can only start after the last ncu (`ncuh export RUN` writes it later).")
@click.option("--slurm", is_flag=True,
              help="Submit one Slurm job array (a task per variant and size) instead.")
@click.option("--slurm-arg", "slurm_args", multiple=True, metavar="ARG",
              help="Passed to sbatch (repeatable), e.g. --slurm-arg=--gres=gpu:1.")
@click.option("-k", "--kernel", default=None, metavar=KERNEL_METAVAR,
              help=f"With a program: {KERNEL_HELP}")
@click.option("--launch-skip", type=click.IntRange(min=0), default=None,
              help="With a program: ncu --launch-skip.")
@click.option("--launch-count", type=click.IntRange(min=1), default=None,
              help="With a program: ncu --launch-count.")
@click.option("--nvtx-include", multiple=True, metavar="EXPR",
              help="With a program: ncu --nvtx-include (repeatable).")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="With a program: time every launch first, rank the kernels (name and "
                   "launch shape) by total GPU time, then profile the N with the most, each "
                   "at its launch nearest the median duration. -k, --nvtx-include, "
                   "--launch-skip and --launch-count choose the launches ranked; --set "
                   "applies to the N.")
@click.option("--graph-profiling", type=click.Choice(GRAPH_PROFILING), default=None,
              help="With a program: ncu --graph-profiling; CUDA graphs' kernels are profiled "
                   "one node at a time ('node', what --top ranks) or a graph as one workload.")
@project_option
@click.argument("program", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND ARGS...]")
def profile(
    variant_names: tuple[str, ...], all_variants: bool, size: tuple[str, ...],
    sizes: tuple[str, ...], section_set: str, sections: tuple[str, ...],
    metrics: tuple[str, ...], clock_control: str, import_source: bool,
    params_json: str | None, warmup: int,
    capture: str, bench: bool, bench_sizes: tuple[str, ...], out: Path, dry_run: bool,
    gpus: str | None, allow_mismatch: bool, metrics_csv: bool, slurm: bool,
    slurm_args: tuple[str, ...], kernel: str | None,
    launch_skip: int | None, launch_count: int | None, nvtx_include: tuple[str, ...],
    top: int | None, graph_profiling: str | None,
    project: Path | None, program: tuple[str, ...],
) -> None:
    """Profile kernel variants (or a program after --) under Nsight Compute.

    Each variant runs in `python -m harness.gpu.runner`, which verifies it and launches it once in
    an NVTX range that ncu captures alone. The run directory (manifest.json, one .ncu-rep per
    variant and size, metrics.csv with --metrics-csv, bench.json with --bench) appears only when
    complete.
    With --gpus, one ncu per GPU works through the targets at once; with --slurm, a job
    array does, and `ncuh merge` joins its shards.
    """
    from harness.profile import ProfileRequest

    variants = variant_names
    filters_given = (kernel or launch_skip is not None or launch_count or nvtx_include
                     or graph_profiling)
    if filters_given and not program:
        raise NcuhError("-k/--launch-skip/--launch-count/--nvtx-include/--graph-profiling "
                        "need a program after --")
    _check_top(top, program, graph_profiling, slurm)
    bench = bench or bool(bench_sizes)
    if program and (size or sizes or bench):
        raise NcuhError("--size/--sizes/--bench apply to variants, not to a program after --")
    if all_variants and variants:
        raise NcuhError("give --variant NAME or --all, not both")
    request = ProfileRequest(
        variants=variants,
        sizes=() if program else size_words(size, sizes),
        settings=NcuSettings(
            set=section_set, sections=sections,
            metrics=tuple(m.strip() for group in metrics for m in group.split(",") if m.strip()),
            clock_control=clock_control, import_source=import_source,
        ),
        out=out,
        params=_params(params_json),
        warmup=warmup,
        bench=bench,
        bench_sizes=size_words((), bench_sizes) if bench_sizes else (),
        all_variants=all_variants,
        capture=capture,
        program=program,
        program_filter=KernelFilter(
            kernel=kernel, launch_skip=launch_skip, launch_count=launch_count,
            nvtx_include=nvtx_include, graph_profiling=graph_profiling,
        ),
        top=top,
        project=None if program else project_path(project),
        gpus=gpus,
        allow_mismatch=allow_mismatch,
        metrics_csv=metrics_csv,
    )
    if slurm_args and not slurm:
        raise NcuhError("--slurm-arg needs --slurm")

    if dry_run:
        _dry_run(request)
        return

    if slurm:
        _submit(request, slurm_args)
        return

    _run(request, out)


def _check_top(top: int | None, program: tuple[str, ...], graph_profiling: str | None,
               slurm: bool) -> None:
    if top is None:
        return
    if not program:
        raise NcuhError("--top ranks the kernels of a program: give one after --")
    if graph_profiling == "graph":
        raise NcuhError("--top ranks kernels, and --graph-profiling graph profiles each CUDA "
                        "graph as one workload: use --graph-profiling node (the default)")
    if slurm:
        raise NcuhError("--top runs its two passes on this host: it does not go with --slurm")


def _print_ranking(first: Any) -> None:
    """The first pass's ranking, per process where several ran (a torchrun's ranks)."""
    from harness.profile import ranking_table

    several = len(first.ranking.processes) > 1
    for process in first.ranking.processes:
        if several:
            device = f"GPU {process.device}" if process.device is not None else "a GPU"
            click.echo(f"process {process.process} on {device} ({process.key}):")
        for line in ranking_table(process, first.top):
            click.echo(printable(line))


def _run(request: Any, out: Path) -> None:
    """Profile for real: the live progress, one line per entry, the run directory last."""
    from harness.profile import ProgressDisplay, run_profile

    progress = ProgressDisplay(sys.stderr)
    try:
        outcome = run_profile(request, progress=progress)
    finally:
        progress.close()
    if outcome.first_pass is not None:
        _print_ranking(outcome.first_pass)
    for note in outcome.notes:
        click.echo(printable(f"ncuh: note: {note}"), err=True)
    for entry in outcome.entries:
        line = f"{entry.status:6} {entry.target.label}  {entry.seconds:.1f} s"
        line += f"  {entry.passes} passes" if entry.passes else ""
        click.echo(printable(line if entry.error is None else f"{line}  {entry.error}"))
    for entry in outcome.failures:
        click.echo(printable(f"ncuh: failed: {entry.target.label}: {entry.error}"), err=True)
    if outcome.metrics_error:
        click.echo(printable(f"ncuh: failed: metrics.csv: {outcome.metrics_error}"), err=True)
    if outcome.overlay_note and not outcome.overlay_note.endswith("=off"):
        click.echo(f"ncuh: note: pages ran on ncu's stock sections ({outcome.overlay_note})",
                   err=True)
    click.echo(printable(out / outcome.run_id))
    if outcome.exit_code:
        sys.exit(outcome.exit_code)


def _submit(request: Any, slurm_args: tuple[str, ...]) -> None:
    """Write and submit the job array; say where the shards go and how to merge them."""
    from harness.profile import plan as make_plan
    from harness.profile import run_id_for, submit

    capture = "nvtx" if request.capture == "auto" else request.capture
    plan = make_plan(request, capture=capture)  # bad names and sizes fail here, not on a node
    submission = submit(plan, run_id_for(request), slurm_args)
    click.echo(f"submitted job array {submission.job_id} ({submission.tasks} tasks): "
               f"{submission.job_dir}", err=True)
    if submission.merged is not None:
        from harness.rundir import load_run

        failed = [entry for entry in load_run(submission.merged).entries if not entry.ok]
        for entry in failed:
            click.echo(printable(f"ncuh: failed: {entry.label}: {entry.error}"), err=True)
        click.echo(printable(submission.merged))
        if failed:
            sys.exit(1)
        return
    click.echo("when it is done: " + " ".join(submission.merge_command), err=True)
    click.echo(str(submission.job_dir))


def _dry_run(request: Any) -> None:
    """Print the exact command lines a real run would execute; needs neither GPU nor ncu."""
    from harness.profile import plan as make_plan
    from harness.profile import run_id_for, with_section_overlay
    from harness.util import ncu_executable

    capture = "nvtx" if request.capture == "auto" else request.capture
    found = ncu_executable()
    ncu = found or Path("ncu")
    if found is not None:  # the section folder `pages` would use with this ncu
        request = dataclasses.replace(
            request, settings=with_section_overlay(request.settings, found))
    plan = make_plan(request, capture=capture)
    run_dir = request.out.resolve() / run_id_for(request)
    for argv in plan.command_lines(ncu, run_dir):
        click.echo(shlex.join(argv))
    if plan.first_pass is not None:
        click.echo(f"ncuh: note: then one ncu per kernel of the top {request.top}, chosen by "
                   "the first pass's ranking", err=True)
