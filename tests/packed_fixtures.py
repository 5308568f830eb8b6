"""Fixtures committed packed: each folder of tests/fixtures keeps its reports and ncu's pages
in one solid archive (`packed.tar.xz`: packed together, the reports' shared metric names and
descriptions pack far smaller than each report alone), written by tests/pack_fixtures.py.

`fixture(path)` names a file by its path in the committed tree, as if it were unpacked there:
the file itself where it is committed as it is, else the same name in its folder unpacked once
per test run into the folder the run's processes share (tests/conftest.py): the archive's
files, each `NAME.xz` beside it unpacked, and the folder's plain files (programs, logs,
manifests) copied along. Reports that are also sample runs in reports/ are not copied into
tests/fixtures: tests read them there.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import lzma
import os
import pickle
import shutil
import tarfile
import tempfile
from pathlib import Path

from conftest import FIXTURES, run_folder
from pack_fixtures import ARCHIVE

from harness.report.builder import load_kernel_reports
from harness.report.model import KernelReport
from harness.report.read_cache import load_model

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


def _fill(folder: Path, into: Path) -> None:
    """Writes into `into` the files of `folder` as tests read them."""
    if (folder / ARCHIVE).is_file():
        with tarfile.open(folder / ARCHIVE) as tar:
            tar.extractall(into, filter="data")  # plain files only, none outside `into`
    for path in folder.iterdir():
        if path.name.endswith(".ncu-rep.xz"):  # a report packed alone (benchmarks/data)
            (into / path.stem).write_bytes(lzma.decompress(path.read_bytes()))
        elif path.is_file() and not path.name.endswith(".xz"):
            shutil.copyfile(path, into / path.name)


@functools.cache
def unpacked(folder: Path) -> Path:
    """`folder`'s files as tests read them, written out once per test run: one process writes
    them (the xdist workers collect at the same time: the others wait for it) and renames its
    whole folder into place, so no process ever meets a half-written one; should another
    process put the folder there first, this one's copy is dropped for it."""
    # named by the folder's whole path: two folders of one name (zoo/ here, zoo/ elsewhere)
    # never share one
    where = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:8]
    target = run_folder() / "unpacked" / f"{folder.name}-{where}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    locks = run_folder() / "unpacking"
    locks.mkdir(exist_ok=True)
    with (locks / target.name).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if target.is_dir():  # written while this process waited
            return target
        scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        try:
            _fill(folder, scratch)
            os.rename(scratch, target)
        except OSError:
            if not target.is_dir():  # not a folder another process put there (a lost race)
                raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def _is_packed(folder: Path) -> bool:
    return (folder / ARCHIVE).is_file() or any(folder.glob("*.ncu-rep.xz"))


def fixture(path: Path) -> Path:
    """The file at `path` in the committed tree (a report, ncu's page of one, a log): itself
    where it is committed as it is, else where its folder is unpacked (`unpacked`)."""
    if path.exists():
        return path
    if _is_packed(path.parent) and (found := unpacked(path.parent) / path.name).is_file():
        return found
    raise FileNotFoundError(f"{path}: neither committed as it is nor packed in its folder")


report = fixture  # the name tests that ask for a report use


def reports(folder: Path, pattern: str = "*.ncu-rep") -> list[Path]:
    """The reports in `folder` whose names match `pattern`, committed as they are or packed
    (written out), sorted by name."""
    where = unpacked(folder) if _is_packed(folder) else folder
    return sorted((path for path in where.glob(pattern) if path.name.endswith(".ncu-rep")),
                  key=lambda path: path.name)


def ncu_page(report: Path, suffix: str) -> Path:
    """Where ncu's page of `report` (`suffix` ".raw.csv", ".details.txt", ...) is read:
    beside it, or for a sample run of reports/, in tests/fixtures under the name `PAGES_OF`
    gives (unpacked). The path may name no file: not every report has every page."""
    stem = PAGES_OF.get(report)
    if stem is None:
        return report.with_name(report.name.removesuffix(".ncu-rep") + suffix)
    return unpacked(stem.parent) / (stem.name + suffix)


@functools.cache
def _profiles(report: Path, kernel_regex: str | None) -> tuple[KernelReport, ...]:
    """The reports' model, read once per test run: the first process to read a report writes
    it into the run's shared folder, and the others load it there (a report is read once,
    not once per xdist worker)."""
    stat = report.stat()
    key = hashlib.sha1(f"{report}|{stat.st_size}|{stat.st_mtime_ns}|{kernel_regex}".encode())
    kept = run_folder() / "profiles" / f"{key.hexdigest()}.pickle"
    if kept.is_file():
        return tuple(load_model(kept.read_bytes()))
    profiles = tuple(load_kernel_reports(report, kernel_regex))
    kept.parent.mkdir(exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=kept.parent, prefix=f".{kept.name}.")
    with os.fdopen(handle, "wb") as out:
        pickle.dump(list(profiles), out, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(temporary, kept)  # whole or not at all: two writers write the same model
    return profiles


def cached_profiles(report: Path, kernel_regex: str | None = None) -> list[KernelReport]:
    """`load_kernel_reports(report)`, read once per test process: the records are frozen, and
    ncu_report's per-process state already makes a second read say what the first said."""
    return list(_profiles(Path(report).resolve(), kernel_regex))


# two SGEMM kernels (naive, shared-memory tiled) at 1024, `--set full` on an H100
NAIVE_SMEM_REPORT = fixture(FIXTURES / "h100_sgemm_naive_smem.ncu-rep")
# ncu's own pages of it: `--page raw --csv` and `--page details --print-details all`
NAIVE_SMEM_RAW_CSV = fixture(FIXTURES / "h100_sgemm_naive_smem.raw.csv")
NAIVE_SMEM_DETAILS = fixture(FIXTURES / "h100_sgemm_naive_smem.details.txt")
