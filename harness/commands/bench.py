"""`ncuh bench`: verify, then time variants against the project's reference; print the table,
save the JSON.

Everything that can be refused without a GPU (a bad project file, unknown variant, bad
--sizes) is refused before the GPU is touched; no GPU or no CuPy is one line on stderr and
exit 2. A result that fails verification is recorded, never timed, and makes the exit status
1 once the JSON is written.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from harness import gpu
from harness.commands.options import (
    open_chosen_project,
    out_option,
    project_option,
    size_options,
    variant_option,
)
from harness.errors import BadSizeError, NcuhError, printable
from harness.gpu import (
    autotune,
    enumerate_configs,
    filter_configs,
    format_table,
    run_bench,
    sample_configs,
)
from harness.project import Project, Size, Variant, size_text


def _default_out() -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"bench-{stamp}"


@click.command(short_help="Check every variant's output, then time it.")
@variant_option("A variant to bench (repeatable); see `ncuh list`.")
@click.option("--all", "all_variants_", is_flag=True, help="Bench every variant of the chain.")
@size_options("the project's default_sizes")
@click.option("--repeats", type=click.IntRange(min=1), default=30, show_default=True,
              help="Event-timed launches per variant and size.")
@click.option("--warmup", type=click.IntRange(min=0), default=5, show_default=True,
              help="Untimed launches first.")
@out_option("Directory for bench.json [default: runs/bench-<UTC time>].", file_okay=False)
@click.option("--tune", is_flag=True,
              help="Sweep the tunable variants at each size first; cache the winners.")
@click.option("--tune-limit", type=click.IntRange(min=0), default=32, show_default=True,
              help="With --tune: configurations compiled per size (defaults + a seeded sample; "
                   "0 = every valid one).")
@click.option("--references/--no-references", default=True, show_default=True,
              help="Also time the reference, the limits, the first variant and each "
                   "variant's previous iteration.")
@click.option("--seed", type=int, default=None, help="Seed the random inputs (default: fresh).")
@project_option
def bench(
    variant_names: tuple[str, ...],
    all_variants_: bool,
    size: tuple[str, ...],
    sizes: tuple[str, ...],
    repeats: int,
    warmup: int,
    out: Path | None,
    tune: bool,
    tune_limit: int,
    references: bool,
    seed: int | None,
    project: Path | None,
) -> None:
    """Check every variant against the project's truth, then time it against its reference."""
    if variant_names and all_variants_:
        raise NcuhError("give either --variant NAME ... or --all, not both")
    if not variant_names and not all_variants_:
        raise NcuhError("choose what to bench: --variant NAME (repeatable) or --all")
    loaded = open_chosen_project(project)
    # Unknown names fail here, listing the known ones, before any GPU work.
    chosen = list(loaded.variants) if all_variants_ else [loaded.variant(n) for n in
                                                          variant_names]
    shapes: list[Size] = []
    for option, texts in (("--size", size), ("--sizes", sizes)):
        for text in texts:
            try:
                shapes += loaded.parse_sizes(text)
            except BadSizeError as error:
                raise BadSizeError(f"bad {option} {text!r}: {error}") from None
    shapes = list(dict.fromkeys(shapes)) or list(loaded.default_sizes)

    gpu.require_gpu()  # (looked up per call: the tests stand a CPU in for the GPU)
    if tune:
        tunable = [v for v in chosen if v.tunable]
        if not tunable:
            click.echo("ncuh: --tune: none of these variants has a tunable space", err=True)
        _tune(loaded, tunable, shapes, tune_limit or None)

    with click.progressbar(
        length=len(chosen) * len(shapes), label="bench", file=sys.stderr,
        item_show_func=lambda item: item or "",
    ) as bar:
        run = run_bench(
            loaded, chosen, shapes, repeats, warmup=warmup, seed=seed, references=references,
            progress=lambda step: bar.update(1, f"{step.variant} {step.size} {step.status}"),
        )

    path = run.save((out or _default_out()) / "bench.json")
    click.echo(printable(format_table(run), keep_lines=True), nl=False)
    click.echo(printable(f"wrote {path}"), err=True)
    failed = [r for r in run.results if r.status == "failed"]
    if failed:
        names = ", ".join(f"{r.variant} {size_text(r.size)}" for r in failed)
        click.echo(printable(f"ncuh: {len(failed)} result(s) failed verification: {names}"),
                   err=True)
        sys.exit(1)


def _tune(project: Project, variants: list[Variant], shapes: list[Size],
          limit: int | None) -> None:
    for variant in variants:
        for size in shapes:
            label = f"tune {variant.name} {size}"
            valid, _ = filter_configs(project, variant, list(enumerate_configs(variant)), size)
            valid = sample_configs(variant, valid, limit)
            with click.progressbar(length=max(len(valid), 1), label=label,
                                   file=sys.stderr) as bar:
                result = autotune(project, variant, size, limit=limit,
                                  progress=lambda _c: bar.update(1))
            best = result.best
            gflops = f" at {best.gflops:,.0f} GFLOP/s" if best and best.gflops else ""
            summary = (
                f"{label}: {result.rejected} rejected before compiling, {result.failed} failed, "
                f"{result.timed} timed (compiled in {result.compile_s:.1f} s); "
                + (f"best {best.params}{gflops}" if best else "no winner")
            )
            click.echo(summary, err=True)
