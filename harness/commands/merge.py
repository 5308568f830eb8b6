"""`ncuh merge`: join shard run directories (a Slurm job array's tasks) into one run."""

from __future__ import annotations

from pathlib import Path

import click

from harness.commands.options import out_option
from harness.errors import printable


@click.command(context_settings={"help_option_names": ["-h", "--help"]},
               short_help="Join run directories (shards) into one.")
@click.argument("shards", nargs=-1, required=True,
                type=click.Path(path_type=Path), metavar="SHARD...")
@out_option("The merged run directory (must not exist).", required=True)
@click.option("--allow-mismatch", is_flag=True,
              help="Merge shards of different GPU models, ncu versions or ncu settings.")
def merge(shards: tuple[Path, ...], out: Path, allow_mismatch: bool) -> None:
    """Join run directories into one run directory that writeup and diff read.

    Refuses shards profiled on different GPU models or with different ncu versions or
    settings unless --allow-mismatch; the result appears only when complete.
    """
    from harness.profile import merge_runs

    merged = merge_runs(list(shards), out, allow_mismatch=allow_mismatch)
    click.echo(printable(merged))
