"""Reports committed packed with xz (`NAME.ncu-rep.xz`, `xz -9`): an `.ncu-rep` packs 10-45
times smaller, which keeps the checkout small.

`unpacked()` writes a packed report out once per test run, into the folder the run's
processes share (tests/conftest.py), with the files beside it (ncu's raw and details pages, a
manifest) copied along, so that tests read it as they read any other fixture. Reports that are
also sample runs in reports/ are not copied into tests/fixtures: tests read them there.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from conftest import FIXTURES, run_folder

from harness.report.builder import load_kernel_reports
from harness.report.model import KernelReport

# Sample runs in reports/ that tests read where they are. ncu's own pages of a report (its raw
# and details pages), where a test compares against them, are in tests/fixtures under the
# name `PAGES_OF` gives.
SAMPLE_RUNS = FIXTURES.parent.parent / "reports" / "runs"
REDUCTION_RUN = SAMPLE_RUNS / "reduction-h100-2p26"  # ten reports, its manifest and bench.json
H200_RUN = SAMPLE_RUNS / "sgemm-h200-256"  # naive and register_tiled at 256 on an H200
H200_NAIVE = H200_RUN / "naive_256.ncu-rep"
H200_REGISTER_TILED = H200_RUN / "register_tiled_256.ncu-rep"
H100_PAGES_NAIVE = SAMPLE_RUNS / "h100-history-naive" / "gemm_1024.ncu-rep"
H100_PAGES_SMEM_TILED = SAMPLE_RUNS / "h100-history-smem_tiled" / "gemm_1024.ncu-rep"
# an earlier `pages` report of naive at 1024, the baseline of reports/diff
H100_PAGES_EARLIER_NAIVE = SAMPLE_RUNS.parent / "diff" / "baseline_naive_1024.ncu-rep"
PAGES_OF = {
    H200_NAIVE: FIXTURES / "h200_naive_256",
    H200_REGISTER_TILED: FIXTURES / "h200_register_tiled_256",
    H100_PAGES_NAIVE: FIXTURES / "h100_pages_naive_1024",
    H100_PAGES_SMEM_TILED: FIXTURES / "h100_pages_smem_tiled_1024",
    H100_PAGES_EARLIER_NAIVE: FIXTURES / "unit_leak" / "h100_pages_earlier_naive_1024",
}


def _write_once(target: Path, write: Callable[[str], object]) -> None:
    """`write(temporary path)`, then renamed to `target`: a worker that meets the file meets
    it whole, and two workers writing it at once write the same bytes."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(handle)
    try:
        write(temporary)
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def _unpack(packed: Path, target: str) -> None:
    Path(target).write_bytes(lzma.decompress(packed.read_bytes()))


@functools.cache
def unpacked(packed: Path) -> Path:
    """The report `packed` (`NAME.ncu-rep.xz`) written out as `NAME.ncu-rep`, with its
    `NAME.*` neighbours beside it."""
    # One folder per fixture folder, named by its whole path: two folders of the same name
    # (zoo/ here, zoo/ elsewhere) never write over each other's reports.
    where = hashlib.sha1(str(packed.parent.resolve()).encode()).hexdigest()[:8]
    folder = run_folder() / "unpacked" / f"{packed.parent.name}-{where}"
    report = folder / packed.name.removesuffix(".xz")
    if report.exists():  # written by this run already (the neighbours first)
        return report
    folder.mkdir(parents=True, exist_ok=True)
    stem = report.name.removesuffix(".ncu-rep")
    for neighbour in packed.parent.glob(f"{stem}.*"):
        if neighbour != packed:
            _write_once(folder / neighbour.name, functools.partial(shutil.copyfile, neighbour))
    _write_once(report, functools.partial(_unpack, packed))
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


def ncu_page(report: Path, suffix: str) -> Path:
    """ncu's page of `report` (`suffix` ".raw.csv.gz", ".details.txt.gz", ...): beside it, or
    for a sample run of reports/, in tests/fixtures under the name `PAGES_OF` gives."""
    stem = PAGES_OF.get(report, report.with_name(report.name.removesuffix(".ncu-rep")))
    return stem.with_name(stem.name + suffix)


@functools.cache
def _profiles(report: Path, kernel_regex: str | None) -> tuple[KernelReport, ...]:
    return tuple(load_kernel_reports(report, kernel_regex))


def cached_profiles(report: Path, kernel_regex: str | None = None) -> list[KernelReport]:
    """`load_kernel_reports(report)`, read once per test process: the records are frozen, and
    ncu_report's per-process state already makes a second read say what the first said."""
    return list(_profiles(Path(report).resolve(), kernel_regex))


# two SGEMM kernels (naive, shared-memory tiled) at 1024, `--set full` on an H100
NAIVE_SMEM_REPORT = report(FIXTURES / "h100_sgemm_naive_smem.ncu-rep")
