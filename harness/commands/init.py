"""`ncuh init DIR`: a small working project to start from (two variants, a reference, a test).

The files come from `harness/project/starter/`: a saxpy chain (one element per thread, then a
grid-stride float4 kernel), CuPy's element-wise kernel as the reference, a device copy as the
practical limit, Strategy notes, and a pytest file (it uses ncuh's `ncuh_bench` fixture, which
pytest finds through ncuh's entry point). DIR must be new or empty.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import click

from harness.errors import NcuhError
from harness.util import atomic_directory

STARTER_FILES = ("ncuh.toml", "saxpy.cu", "saxpy_project.py", "test_saxpy.py", "pytest.ini",
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
    existed = directory.is_dir()
    try:
        if existed:
            directory.rmdir()  # empty: the project appears in its place whole, or not at all
        with atomic_directory(directory) as building:
            for name in STARTER_FILES:
                target = building / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / name, target)
    except OSError as error:
        if existed:
            directory.mkdir(exist_ok=True)
        raise NcuhError(f"{directory}: cannot write the project ({error.strerror or error})") \
            from None
    return [directory / name for name in STARTER_FILES]


@click.command("init", short_help="Write a small working project to start from.")
@click.argument("directory", type=click.Path(path_type=Path))
def init(directory: Path) -> None:
    """Write a small working project into DIRECTORY (new or empty): `ncuh list` reads it,
    `ncuh bench --all` runs it on a GPU."""
    for path in write_project(directory):
        click.echo(f"wrote {path}")
    click.echo(f"next: cd {directory} && ncuh check && ncuh bench --all", err=True)
    from harness.gpu import find_nvrtc, nvrtc_install_hint

    if find_nvrtc() is None:  # without it `ncuh check` cannot compile the CUDA variants
        click.echo(f"note: `ncuh check` compiles the variants with NVRTC, which needs ncuh's "
                   f"nvrtc extra: {nvrtc_install_hint()}", err=True)
