"""Reports committed packed with xz: an `.ncu-rep` packs 23-45 times smaller (the async-copy
pair: 5.2 MB to 0.2 MB), which keeps the checkout small enough to travel to a GPU machine.

`unpacked()` writes a packed report out into a temporary folder of this test process's own
(removed when it exits), with the files beside it (ncu's raw and details pages, a manifest)
copied along, so that tests read it as they read any other fixture.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import lzma
import shutil
import tempfile
from pathlib import Path

from harness.report.builder import load_kernel_reports
from harness.report.model import KernelReport


@functools.cache
def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="ncuh-fixtures-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def unpacked(packed: Path) -> Path:
    """The report `packed` (`NAME.ncu-rep.xz`) written out as `NAME.ncu-rep`, with its
    `NAME.*` neighbours beside it."""
    # One folder per fixture folder, named by its whole path: two folders of the same name
    # (zoo/ here, zoo/ elsewhere) never write over each other's reports.
    where = hashlib.sha1(str(packed.parent.resolve()).encode()).hexdigest()[:8]
    folder = _folder() / f"{packed.parent.name}-{where}"
    folder.mkdir(exist_ok=True)
    report = folder / packed.name.removesuffix(".xz")
    report.write_bytes(lzma.decompress(packed.read_bytes()))
    stem = report.name.removesuffix(".ncu-rep")
    for neighbour in packed.parent.glob(f"{stem}.*"):
        if neighbour != packed:
            shutil.copyfile(neighbour, folder / neighbour.name)
    return report


def report(path: Path) -> Path:
    """The report at `path` (`NAME.ncu-rep`): the file itself where it is committed as it is,
    else its packed `NAME.ncu-rep.xz` written out (`unpacked`)."""
    packed = path.with_name(path.name + ".xz")
    if path.exists():
        return path
    if packed.is_file():
        return unpacked(packed)
    raise FileNotFoundError(f"neither {path} nor {packed.name} beside it")


def reports(folder: Path, pattern: str = "*.ncu-rep") -> list[Path]:
    """The reports in `folder` whose names match `pattern`, committed as they are or packed
    (written out), sorted by name."""
    found = {path.name: path for path in folder.glob(pattern) if path.name.endswith(".ncu-rep")}
    for packed in folder.glob(f"{pattern}.xz"):
        if packed.name.endswith(".ncu-rep.xz"):
            found.setdefault(packed.name.removesuffix(".xz"), packed)
    return [unpacked(path) if path.suffix == ".xz" else path
            for _, path in sorted(found.items())]


@functools.cache
def _profiles(report: Path, kernel_regex: str | None) -> tuple[KernelReport, ...]:
    return tuple(load_kernel_reports(report, kernel_regex))


def cached_profiles(report: Path, kernel_regex: str | None = None) -> list[KernelReport]:
    """`load_kernel_reports(report)`, read once per test process: the records are frozen, and
    ncu_report's per-process state already makes a second read say what the first said."""
    return list(_profiles(Path(report).resolve(), kernel_regex))
