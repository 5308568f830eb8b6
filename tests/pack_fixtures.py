"""Moves reports and ncu's pages into their folder's archive (`packed.tar.xz`), the one place a
folder of tests/fixtures keeps them:

    python3 tests/pack_fixtures.py tests/fixtures/zoo zoo_new.ncu-rep zoo_new.raw.csv \
        zoo_new.details.txt

Each FILE goes in under its own name (replacing one of that name), then is removed. The archive
is rewritten whole, solid (`xz -9e`: the reports' shared metric names and descriptions pack
together), its members sorted and stamped alike, so the same files always pack to the same
bytes. `python3 tests/pack_fixtures.py FOLDER` alone rewrites it as it is.
"""

from __future__ import annotations

import io
import lzma
import os
import sys
import tarfile
import tempfile
from pathlib import Path

ARCHIVE = "packed.tar.xz"
# What an archive holds: reports and ncu's pages of them, and a program's launch tables.
PACKED_SUFFIXES = (".ncu-rep", ".raw.csv", ".details.txt", ".held.csv")


def members(archive: Path) -> dict[str, bytes]:
    """Name -> bytes of each file in `archive` (none where it does not exist)."""
    if not archive.is_file():
        return {}
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def write(archive: Path, files: dict[str, bytes]) -> None:
    """`files` packed into `archive`, written beside it and renamed into place."""
    handle, temporary = tempfile.mkstemp(dir=archive.parent, prefix=f".{archive.name}.")
    try:
        with os.fdopen(handle, "wb") as out, \
                tarfile.open(fileobj=out, mode="w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
            for name in sorted(files):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(files[name]), 0o644
                tar.addfile(info, io.BytesIO(files[name]))
        os.chmod(temporary, 0o644)  # mkstemp's file is its owner's alone
        os.replace(temporary, archive)
    finally:
        Path(temporary).unlink(missing_ok=True)


def _refused(added: list[Path]) -> str | None:
    """Why the files named cannot go in, or None: each must exist, be a report or a page, and
    have a name of its own (the archive keeps names, not folders)."""
    missing = [str(path) for path in added if not path.is_file()]
    if missing:
        return f"no such file: {', '.join(missing)}"
    foreign = [path.name for path in added if not path.name.endswith(PACKED_SUFFIXES)]
    if foreign:
        return (f"{', '.join(foreign)}: only {', '.join(PACKED_SUFFIXES)} files are packed; "
                "keep the others as they are")
    names = [path.name for path in added]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return f"{', '.join(twice)} named twice: one file a name"
    return None


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python3 tests/pack_fixtures.py FOLDER [FILE...]", file=sys.stderr)
        return 2
    folder, added = Path(argv[0]), [Path(name) for name in argv[1:]]
    if not folder.is_dir():
        print(f"pack_fixtures: {folder} is not a folder", file=sys.stderr)
        return 2
    refused = _refused(added)
    if refused:
        print(f"pack_fixtures: {refused}", file=sys.stderr)
        return 2
    try:
        files = members(folder / ARCHIVE)
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as error:
        said = " ".join(str(error).split())  # tarfile lists each method it tried, a line each
        print(f"pack_fixtures: {folder / ARCHIVE} cannot be read ({said}); nothing was changed",
              file=sys.stderr)
        return 2
    files.update((path.name, path.read_bytes()) for path in added)
    write(folder / ARCHIVE, files)
    for path in added:
        path.unlink()
    print(f"{folder / ARCHIVE}: {len(files)} files, {(folder / ARCHIVE).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
