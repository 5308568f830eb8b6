"""Typed reports kept from an earlier read, so that a report is asked of ncu_report once.

What `load_kernel_reports` builds from a report, diff's summaries of it (`summary_key`) and
`ncuh export`'s table are kept under `<user cache>/_reports/`, keyed by a hash of the report's
bytes, this ncuh's report-reading code and version, the ncu_report and the Python in use: an
edited report or another reader never meets an old entry. Nothing is written beside a report.
ncu_report answers a few derived units from what its process asked before, so an entry is made
only where the reading matches a reading of that report alone (`BuiltReport.alone`). Entries
are read back by an unpickler that builds only the report model's dataclasses and plain
containers; the least recently used beyond `KEEP_BYTES` are dropped, and
`NCUH_REPORT_AND_PLOT_CACHE=off` reads and keeps nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import pickle
import stat
import sys
import zlib
from functools import cache
from pathlib import Path
from typing import Any

from harness import __version__
from harness.report.ncu_import import import_ncu_report
from harness.util import (
    cache_dir,
    mark_used,
    private_folder,
    prune,
    read_kept,
    store,
)

CACHE_FOLDER = "_reports"
SUFFIX = ".pickle.z"
TEXT_SUFFIX = ".txt.z"  # an export's table (`keep_text`)
ASKED_SUFFIX = ".asked.z"  # an export asked for once, kept when asked again (`asked_again`)
KEEP_BYTES = 512 * 1024 * 1024  # entries are about a fifth of their report
_FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent
_CHUNK = 1 << 20


def folder() -> Path:
    """Where entries live (not created here); RuntimeError without a home directory."""
    return cache_dir() / CACHE_FOLDER


def _sha256(data: bytes = b"") -> Any:
    import hashlib  # here, not at import: `ncuh report` starts without it

    return hashlib.sha256(data)


@cache
def _reader_fingerprint() -> bytes:
    """What a kept entry was built by: this package's reading code, ncuh, ncu_report, Python."""
    digest = _sha256(f"{_FORMAT}|{__version__}|{sys.version}".encode())
    # the reading code, and the slimmed sections the details view consults
    sources = [*sorted(_PACKAGE.glob("*.py")), _PACKAGE.parent / "rundir" / "slim_sections.py"]
    for source in sources:
        digest.update(source.name.encode())
        with contextlib.suppress(OSError):
            digest.update(source.read_bytes())
    module = import_ncu_report()
    digest.update(str(getattr(module, "__file__", "")).encode())
    # ncu_report carries no __version__: the name of its installed metadata folder holds it
    # (read here rather than through importlib.metadata, whose import costs every command)
    package = Path(str(getattr(module, "__file__", "."))).parent
    digest.update(" ".join(sorted(p.name for p in package.parent.glob("ncu_report-*-info")))
                  .encode())
    for library in sorted(Path(str(getattr(module, "__file__", "."))).parent.glob("*.so")):
        with contextlib.suppress(OSError):
            stat_result = library.stat()
            digest.update(f"{library.name}|{stat_result.st_size}|{stat_result.st_mtime_ns}"
                          .encode())
    return digest.digest()


def report_key(path: Path) -> str | None:
    """The entry name of the report at `path` as it is now; None where it cannot be read
    (the reader then says why)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would never end
            return None
        digest = _sha256(_reader_fingerprint())
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()[:40]


def summary_key(key: str) -> str:
    """The entry name of a report's summaries of every metric (`builder.summarize_kernel`)."""
    return _sha256(f"{key}|summaries".encode()).hexdigest()[:40]


class _ModelUnpickler(pickle.Unpickler):
    """Builds the report model's dataclasses and nothing else: an entry is data."""

    _MODULES = frozenset({"harness.report.model", "harness.report.roofline"})
    _BUILTINS = frozenset({"frozenset", "set", "tuple", "list", "dict", "complex"})

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in self._BUILTINS:
            return super().find_class(module, name)
        if module in self._MODULES:
            found = super().find_class(module, name)
            if isinstance(found, type) and dataclasses.is_dataclass(found):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a kept report")


def load_model(data: bytes) -> Any:
    """What `data` (a pickle) holds, built from the report model's dataclasses alone;
    `pickle.UnpicklingError` for anything else in it."""
    return _ModelUnpickler(io.BytesIO(data)).load()


def _kept_bytes(name: str) -> tuple[bytes, Path] | None:
    """The inflated bytes of the entry file `name` and its path; None where there is none
    readable, or the folder is not private (another user's entries would be served as
    results)."""
    target = folder()
    if not private_folder(target):
        return None
    path = target / name
    data = read_kept(path)
    return (data, path) if data is not None else None


def fetch(key: str) -> list[Any] | None:
    """The kernel reports kept under `key`; None where there is no readable entry."""
    try:
        found = _kept_bytes(f"{key}{SUFFIX}")
        if found is None:
            return None
        data, path = found
        profiles = load_model(data)
    # RuntimeError: no home directory; the rest: a cut or foreign pickle
    except (OSError, RuntimeError, pickle.UnpicklingError, EOFError,
            AttributeError, ImportError, TypeError, ValueError, MemoryError):
        return None
    # what `keep` writes: a list of kernel reports (whole, or summaries); anything else is
    # not ours
    from harness.report.model import KernelReport  # here: an export's start needs no model

    if not isinstance(profiles, list) or not all(isinstance(p, KernelReport) for p in profiles):
        return None
    mark_used(path)
    return profiles


def keep(key: str, profiles: list[Any]) -> bool:
    """Keep `profiles` under `key` (atomically); False where the cache cannot be written,
    which is no error: the next read asks the report again."""
    try:
        data = zlib.compress(pickle.dumps(profiles, protocol=pickle.HIGHEST_PROTOCOL), 1)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return False
    return _store(key, data)


def fetch_text(key: str) -> bytes | None:
    """The UTF-8 text kept under `key` by `keep_text`; None where there is none readable."""
    try:
        found = _kept_bytes(f"{key}{TEXT_SUFFIX}")
        if found is None:
            return None
        data, path = found
        data.decode("utf-8")  # served only whole and valid: it is written out as it is
    except (OSError, RuntimeError, UnicodeDecodeError, MemoryError):
        return None
    mark_used(path)
    return data


def asked_again(key: str) -> bool:
    """Whether the text under `key` was asked for before (and not kept); the first time, a
    note of it is kept instead. A text is kept from its second asking on: a one-off export
    takes no room in the cache, and a first one does not wait for its packing."""
    try:
        target = folder()
        if not private_folder(target):
            return False
        note = target / f"{key}{ASKED_SUFFIX}"
        if note.is_file():
            return True
        store(target, note.name, zlib.compress(b"", 1))
    except (OSError, RuntimeError):
        pass
    return False


def keep_text(key: str, packed: list[bytes]) -> bool:
    """Keep a text made from a report (an export) under `key`, given as its parts packed
    apart (zlib streams, one after another); False where it cannot be."""
    kept = _store(key, b"".join(packed), suffix=TEXT_SUFFIX)
    if kept:
        with contextlib.suppress(OSError, RuntimeError):
            (folder() / f"{key}{ASKED_SUFFIX}").unlink(missing_ok=True)
    return kept


def _store(key: str, data: bytes, suffix: str = SUFFIX) -> bool:
    """Write packed `data` as the entry `key` into the cache, which is then pruned."""
    try:
        target = folder()
        if not private_folder(target):
            return False
        store(target, f"{key}{suffix}", data)
        prune(target, KEEP_BYTES)
    except (OSError, RuntimeError):
        return False
    return True
