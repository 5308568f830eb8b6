"""Files ncuh keeps under its user cache for a later command: read back only from a folder of
this user's that no one else may write, without following links, and bounded in size.

What is kept is a result (typed reports, an export's table, a drawn plot), so a file planted
by someone else would be served as one: `private_folder` refuses a folder another user owns
or may write, and `read_kept` refuses a file another user owns or may write, a link, a FIFO,
an oversized file or a zlib bomb. `owned_privately` is that one test of ownership, for every
file and folder read back from the user cache.
Files are zlib-packed, written atomically, and the least recently used beyond a folder's
budget are dropped (`prune`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
import zlib
from pathlib import Path

from harness.util.env_switch import switched_off
from harness.util.user_cache import CACHE_SWITCH_ENV, OLD_CACHE_SWITCH_ENV

# Past these a kept file is not one of ours (a planted file, a link to a device, a zlib bomb)
# and is read as none.
MAX_PACKED_BYTES = 256 * 1024 * 1024
MAX_PLAIN_BYTES = 1024 * 1024 * 1024
PACKED_GLOB = "*.z"  # every kept file's name ends in .z
_STALE_S = 3600  # what a process killed while writing left behind, pruned after an hour


def cache_wanted() -> bool:
    """Whether kept files are read and written (`NCUH_REPORT_AND_PLOT_CACHE`, or its former
    name where it is unset, is not "off")."""
    return not switched_off(CACHE_SWITCH_ENV if CACHE_SWITCH_ENV in os.environ
                            else OLD_CACHE_SWITCH_ENV)


def owned_privately(info: os.stat_result) -> bool:
    """Whether a file or folder of the user cache may be trusted: this user's, and writable by
    no one else (no group or other write bit)."""
    owner_ok = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return owner_ok and not info.st_mode & 0o022


def private_folder(target: Path) -> bool:
    """Whether `target` may hold kept files: a folder of this user's that no one else may
    write (made so where it is missing)."""
    try:
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = target.stat()
    except (OSError, RuntimeError):
        return False
    return stat.S_ISDIR(info.st_mode) and owned_privately(info)


def read_owned(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of a file of the user cache: a regular file of at most `max_bytes` that this
    user owns and no one else may write (no link followed, no FIFO waited on); None otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        handle = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        with os.fdopen(handle, "rb") as stream:
            info = os.fstat(stream.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes \
                    or not owned_privately(info):
                return None
            data = stream.read(max_bytes + 1)
    except (OSError, MemoryError):
        return None
    return data if len(data) <= max_bytes else None


def read_kept(path: Path) -> bytes | None:
    """A kept file's unpacked bytes: a file `read_owned` reads, of bounded size, inflated to a
    bounded size; None otherwise."""
    packed = read_owned(path, MAX_PACKED_BYTES)
    return None if packed is None else inflated(packed, MAX_PLAIN_BYTES)


def inflated(packed: bytes, limit: int) -> bytes | None:
    """The bytes of one or more zlib streams one after another (parts packed apart, as an
    export's are), at most `limit` in all; None where that is not what `packed` holds (not
    zlib, a stream cut short, more than `limit` bytes: a zlib bomb stops there)."""
    members: list[bytes] = []
    left = limit
    try:
        while True:
            if left <= 0:  # a further stream past the bound (a max_length of 0 means none)
                return None
            inflater = zlib.decompressobj()
            members.append(inflater.decompress(packed, left))
            left -= len(members[-1])
            if inflater.unconsumed_tail or not inflater.eof:
                return None
            packed = inflater.unused_data
            if not packed:
                return b"".join(members)
    except (zlib.error, MemoryError):
        return None


def mark_used(path: Path) -> None:
    """Mark a kept file recently used: `prune` keeps it longest."""
    with contextlib.suppress(OSError):
        os.utime(path)


def store(target: Path, name: str, packed: bytes) -> None:
    """Write `packed` (zlib bytes) as `target/name`, atomically. OSError where it cannot."""
    handle, temporary = tempfile.mkstemp(dir=target, prefix=".incomplete-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(packed)
        os.replace(temporary, target / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def keep_packed(target: Path, name: str, data: bytes, budget_bytes: int) -> bool:
    """Keep `data` packed as `target/name` in a private folder, then prune the folder to
    `budget_bytes`; False where it cannot be kept, which is no error for a cache."""
    try:
        if not private_folder(target):
            return False
        store(target, name, zlib.compress(data, 1))
        prune(target, budget_bytes)
    except (OSError, RuntimeError):
        return False
    return True


def prune(target: Path, budget_bytes: int) -> None:
    """Drop the least recently used kept files past `budget_bytes`, and what a process killed
    while writing left behind an hour ago."""
    stale = time.time() - _STALE_S
    for path in target.glob(".incomplete-*"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < stale:
                path.unlink()
    entries = []
    for path in target.glob(PACKED_GLOB):
        with contextlib.suppress(OSError):
            info = path.stat()
            entries.append((info.st_mtime, info.st_size, path))
    entries.sort(reverse=True)
    total = 0
    for _, size, path in entries:
        total += size
        if total > budget_bytes:
            with contextlib.suppress(OSError):
                path.unlink()
