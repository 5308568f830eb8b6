"""Committed pages held to what `ncuh writeup` writes: a sample run copied with its packed
reports unpacked, the pages written in a process of their own, and compared page by page."""

from __future__ import annotations

import lzma
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def unpacked_copy(run: Path, into: Path) -> Path:
    """A copy of the run directory `run` under `into`, named as it is (the pages name the
    run's folder), its `.ncu-rep.xz` reports unpacked, as its README tells a user to."""
    copy = into / run.name
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("*.xz"))
    for packed in run.glob("*.ncu-rep.xz"):
        (copy / packed.stem).write_bytes(lzma.decompress(packed.read_bytes()))
    return copy


def write_pages(*args: str) -> None:
    """`ncuh ARGS` in a process of its own: ncu_report gives a derived metric the unit of the
    first report a process opens, so pages are written as a user's fresh command writes them."""
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _without_images(text: str) -> str:
    """A page with its inlined plots left out: their bytes are matplotlib's and its fonts'."""
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,", text)


def assert_pages_as_committed(written: Path, committed: Path, names: list[str],
                              suffixes: tuple[str, ...] = (".md", ".html")) -> None:
    """The pages `names` (no suffix; Markdown and HTML unless `suffixes` says) in `written` are
    those in `committed`, and no others: byte for byte but for the plots' own bytes."""
    for suffix in suffixes:
        found = sorted(path.name for path in written.glob(f"*{suffix}"))
        assert found == sorted(path.name for path in committed.glob(f"*{suffix}"))
        assert found == sorted(f"{name}{suffix}" for name in names)
        for name in found:
            assert _without_images((written / name).read_text()) == (
                _without_images((committed / name).read_text())), name
