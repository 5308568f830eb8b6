"""`ncuh init DIR`: a small working project to start from (two variants, a reference, a test).

The files come from `harness/project/starter/`: a saxpy chain (one element per thread, then a
grid-stride float4 kernel), CuPy's element-wise kernel as the reference, a device copy as the
practical limit, Strategy notes and a pytest file. DIR must be new or empty.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import click

from harness.errors import NcuhError

STARTER_FILES = ("ncuh.toml", "saxpy.cu", "saxpy_project.py", "test_saxpy.py",
                 "notes/naive.md", "notes/vectorized.md")


def starter_dir() -> Path:
    return Path(str(resources.files("harness.project") / "starter"))


def write_project(directory: Path) -> list[Path]:
    """Copy the starter project into `directory` (new or empty); the files written."""
    if directory.exists() and not directory.is_dir():
        raise NcuhError(f"{directory}: exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise NcuhError(f"{directory}: not empty; ncuh init writes a new project into a new or "
                        "empty directory")
    source = starter_dir()
    written = []
    try:
        for name in STARTER_FILES:
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target)
            written.append(target)
    except OSError as error:
        raise NcuhError(f"{directory}: cannot write the project ({error.strerror or error})") \
            from None
    return written


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path))
def init(directory: Path) -> None:
    """Write a small working project into DIRECTORY (new or empty): `ncuh list` reads it,
    `ncuh bench --all` runs it on a GPU."""
    for path in write_project(directory):
        click.echo(f"wrote {path}")
    click.echo(f"next: cd {directory} && ncuh list && ncuh bench --all", err=True)
