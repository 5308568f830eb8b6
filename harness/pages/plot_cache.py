"""Plots drawn before, kept under `<user cache>/_plots/` so that writing the same pages again
neither imports matplotlib nor draws.

A plot is a pure function of its chart's inputs: the key is a hash of the drawing code
(plots.py, and roofline.py whose derived values a chart plots), matplotlib's and Pillow's
versions, the chart's name and the `repr` of its inputs (exact for floats). The drawing runs
under matplotlib's default settings, so a user's matplotlibrc cannot make one key stand for two
pictures. What is kept is a file name stem, a caption and PNG bytes, read back through
`harness.util.read_kept` from a private folder and served only as a plain stem and a PNG;
`NCUH_REPORT_AND_PLOT_CACHE=off` reads and keeps nothing here either.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from harness.util import (
    cache_dir,
    cache_wanted,
    keep_packed,
    mark_used,
    private_folder,
    read_kept,
)

FOLDER = "_plots"
SUFFIX = ".png.z"
KEEP_BYTES = 64 * 1024 * 1024  # a chain's six plots are about 200 KB
_FORMAT = 1
# what a plot is drawn from: the charts, and the roofline's derived values they plot
_DRAWING_CODE = (Path(__file__).resolve().with_name("plots.py"),
                 Path(__file__).resolve().parent.parent / "report" / "roofline.py")
# a kept plot's name becomes a file name under the pages' plots/ folder: a plain stem only
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_SEPARATOR = b"\0"  # after each text (UTF-8, never holding NUL), before the PNG
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@cache
def _drawer_fingerprint() -> bytes:
    digest = hashlib.sha256(f"{_FORMAT}|{sys.version}".encode())
    for source in _DRAWING_CODE:
        digest.update(source.read_bytes())
    for package in ("matplotlib", "pillow"):
        try:
            digest.update(f"|{package} {importlib.metadata.version(package)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"|{package} none".encode())
    return digest.digest()


def _key(chart: str, inputs: str) -> str | None:
    try:
        fingerprint = _drawer_fingerprint()
    except OSError:
        return None
    return hashlib.sha256(fingerprint + chart.encode() + b"|" + inputs.encode()).hexdigest()


def _unpacked(data: bytes) -> tuple[str, str, bytes] | None:
    name, _, rest = data.partition(_SEPARATOR)
    caption, _, png = rest.partition(_SEPARATOR)
    if not png.startswith(_PNG_SIGNATURE) or not _NAME.fullmatch(name.decode("ascii", "replace")):
        return None
    try:
        return name.decode("ascii"), caption.decode("utf-8"), png
    except UnicodeDecodeError:
        return None


def kept(chart: str, inputs: str) -> tuple[str, str, bytes] | None:
    """The (file name stem, caption, PNG) kept for `chart` and `inputs` (their repr); None
    where none is kept, or nothing may be."""
    path = _entry(chart, inputs)
    if path is None:
        return None
    data = read_kept(path) if private_folder(path.parent) else None
    found = _unpacked(data) if data is not None else None
    if found is not None:
        mark_used(path)
    return found


def keep(chart: str, inputs: str, drawn: tuple[str, str, bytes]) -> None:
    """Keep what `chart` drew for `inputs`, where plots may be kept."""
    path = _entry(chart, inputs)
    if path is None:
        return
    name, caption, png = drawn
    keep_packed(path.parent, path.name,
                name.encode() + _SEPARATOR + caption.encode() + _SEPARATOR + png, KEEP_BYTES)


def _entry(chart: str, inputs: str) -> Path | None:
    key = _key(chart, inputs) if cache_wanted() else None
    if key is None:
        return None
    try:
        return cache_dir() / FOLDER / f"{key}{SUFFIX}"
    except RuntimeError:  # no home directory
        return None


def kept_or_drawn(chart: str, inputs: str,
                  draw: Callable[[], tuple[str, str, bytes]]) -> tuple[str, str, bytes]:
    """The (file name stem, caption, PNG) of `chart` for `inputs` (their repr): kept from an
    earlier drawing, else drawn by `draw` and kept."""
    found = kept(chart, inputs)
    if found is not None:
        return found
    drawn = draw()
    keep(chart, inputs, drawn)
    return drawn
