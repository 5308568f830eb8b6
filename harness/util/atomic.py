"""Write outputs so that an interrupted command never leaves a half file that looks whole.

Files and directories are built under a temporary name beside their destination and renamed
into place only when complete (a rename within one file system is atomic on POSIX). A set of
files (`atomic_file_set`, the writeup pages) is built in a temporary sibling directory and
moved in only when every file of it was written.

Every OS failure (read-only file system, no permission, disk full, a name too long, a path
under a file, a directory where a file should go) is an `OutputError`: one line naming the
destination, exit status 2. Writing to a symbolic link writes the file it points to (the link
stays a link), and overwriting a file keeps its permission bits. SIGINT, SIGTERM and SIGHUP are
held back while a set is renamed into place and while a staging folder is removed
(`harness.util.deferred_signals`): a signal never leaves half a set or half a staging folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from harness.errors import OutputError, os_error_text
from harness.util.input_file import file_kind
from harness.util.signals import deferred_signals, pause_at

# tempfile's random part is 8 characters; a hidden temporary name is ".<name>.<random><suffix>"
_RANDOM_CHARS = 8
_DEFAULT_NAME_MAX = 255


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _cannot(destination: Path, error: OSError) -> OutputError:
    return OutputError(f"cannot write {destination}: {os_error_text(error)}")


def _name_max(directory: Path) -> int:
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return _DEFAULT_NAME_MAX


def _check_name(destination: Path, name_max: int) -> None:
    if len(os.fsencode(destination.name)) > name_max:
        raise OutputError(
            f"cannot write {destination}: file name too long "
            f"({len(os.fsencode(destination.name))} bytes, the limit is {name_max})")


def _temp_prefix(name: str, suffix: str, name_max: int) -> str:
    """'.<name>.' cut short enough that the whole temporary name fits in NAME_MAX bytes, so a
    legal destination name never fails because of the hidden name beside it."""
    budget = name_max - len(os.fsencode(f"..{suffix}")) - _RANDOM_CHARS
    while len(os.fsencode(name)) > budget:
        name = name[:-1]
    return f".{name}."


def _resolve(destination: Path) -> Path:
    """Where the bytes go: a symbolic link is followed to the file it names."""
    return Path(os.path.realpath(destination)) if destination.is_symlink() else destination


def _prepare_parent(destination: Path) -> int:
    """Create the parent folder; return NAME_MAX there. `OutputError` when that fails."""
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(
            f"cannot write {destination}: {destination.parent} exists and is not a directory"
        ) from None
    except OSError as error:
        raise _cannot(destination, error) from None
    if not destination.parent.is_dir():
        raise OutputError(f"cannot write {destination}: {destination.parent} is not a directory")
    name_max = _name_max(destination.parent)
    _check_name(destination, name_max)
    return name_max


def _existing_mode(destination: Path) -> int | None:
    """The permission bits of the file being replaced; None when there is none."""
    try:
        info = os.stat(destination)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise OutputError(f"cannot write {destination}: it is a directory")
    if not stat.S_ISREG(info.st_mode):
        # replacing /dev/null or a FIFO with a regular file is never what was meant
        raise OutputError(f"cannot write {destination}: it is {file_kind(info.st_mode)}")
    return stat.S_IMODE(info.st_mode)


def _identity(path: Path) -> tuple[str, tuple[int, int] | None]:
    try:
        info = os.stat(path)
    except OSError:
        return os.path.realpath(path), None
    return os.path.realpath(path), (info.st_dev, info.st_ino)


def refuse_inputs(destination: Path | str, inputs: Iterable[Path | str]) -> None:
    """`OutputError` when writing `destination` would replace one of the files `inputs`: the
    same file by name, through a symbolic link or as a hard link."""
    where, inode = _identity(Path(destination))
    for file in inputs:
        path, other = _identity(Path(file))
        if path == where or (inode is not None and inode == other):
            raise OutputError(f"cannot write {destination}: it is {file}, an input of this "
                              "command (inputs are never written)")


def refuse_input_folders(destination: Path | str, inputs: Iterable[Path | str]) -> None:
    """`OutputError` when the folder `destination` (pages written as a set) is one of
    `inputs` or lies inside an input folder (a run directory): inputs are never written."""
    where = Path(os.path.realpath(destination))
    for source in inputs:
        path = Path(os.path.realpath(source))
        if where == path or (path.is_dir() and where.is_relative_to(path)):
            within = "inside " if where != path else ""
            raise OutputError(f"cannot write into {destination}: it is {within}{source}, an "
                              "input of this command (inputs are never written)")


@contextlib.contextmanager
def atomic_path(destination: Path | str, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary file path beside `destination`; rename it there on success.

    On any exception (KeyboardInterrupt included) the temporary file is removed and the
    destination is left as it was; an OSError becomes a one-line `OutputError`.
    """
    requested = Path(destination)
    try:
        destination = _resolve(requested)
        name_max = _prepare_parent(destination)
        mode = _existing_mode(destination)
        fd, tmp_name = tempfile.mkstemp(
            prefix=_temp_prefix(destination.name, f"{suffix}.tmp", name_max),
            suffix=f"{suffix}.tmp", dir=destination.parent)
        os.close(fd)
    except OSError as error:
        raise _cannot(requested, error) from None
    tmp = Path(tmp_name)
    try:
        # mkstemp creates 0600; a new output gets the usual umask mode, a replaced one its own
        tmp.chmod(mode if mode is not None else 0o666 & ~_umask())
        yield tmp
        pause_at(f"publish {destination.name}")
        os.replace(tmp, destination)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise _cannot(requested, error) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(destination: Path | str, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `destination` atomically and return the destination path."""
    with atomic_path(destination) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(destination)


def atomic_write_bytes(destination: Path | str, data: bytes) -> Path:
    """Write `data` to `destination` atomically and return the destination path."""
    with atomic_path(destination) as tmp:
        tmp.write_bytes(data)
    return Path(destination)


def _temp_directory(destination: Path) -> Path:
    name_max = _prepare_parent(destination)
    tmp = Path(tempfile.mkdtemp(
        prefix=_temp_prefix(destination.name, ".incomplete", name_max), suffix=".incomplete",
        dir=destination.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp creates 0700
    return tmp


@contextlib.contextmanager
def atomic_directory(destination: Path | str) -> Iterator[Path]:
    """Yield a temporary directory beside `destination`; rename it there when complete.

    The temporary name starts with a dot and ends in `.incomplete`, so a crashed run is
    recognisable and never mistaken for a finished one.
    """
    destination = Path(destination)
    # A folder made for it (`--out runs/new`) goes too when it fails, if nothing else is there.
    made_parent = not destination.parent.exists()
    try:
        if destination.exists():
            raise OutputError(f"cannot write {destination}: it already exists")
        tmp = _temp_directory(destination)
    except OSError as error:
        raise _cannot(destination, error) from None
    try:
        yield tmp
        pause_at(f"publish {destination.name}")
        os.replace(tmp, destination)
    except OSError as error:
        with deferred_signals():
            _remove_attempt(tmp, made_parent)
        raise _cannot(destination, error) from None
    except BaseException:
        with deferred_signals():  # a second signal must not leave half a staging folder
            _remove_attempt(tmp, made_parent)
        raise


def _remove_attempt(tmp: Path, made_parent: bool) -> None:
    shutil.rmtree(tmp, ignore_errors=True)
    if made_parent:
        with contextlib.suppress(OSError):  # not empty: someone else's files are there now
            tmp.parent.rmdir()


def _staged_files(stage: Path, last: Sequence[str]) -> list[Path]:
    files = sorted(p.relative_to(stage) for p in stage.rglob("*") if not p.is_dir())
    return [p for p in files if p.as_posix() not in last] + \
        [p for p in files if p.as_posix() in last]


def _move_into(stage: Path, destination: Path, last: Sequence[str]) -> None:
    """Rename every staged file over its place in `destination`, the `last` names at the end.

    Every target is checked before the first rename, so a directory where a page should go
    stops the move before anything changed; renames take no space, so a full disk cannot
    stop it halfway.
    """
    files = _staged_files(stage, last)
    for relative in files:
        target = destination / relative
        for parent in reversed(relative.parents[:-1]):
            if (destination / parent).exists() and not (destination / parent).is_dir():
                raise OutputError(f"cannot write {target}: {destination / parent} is a file")
        mode = _existing_mode(target)
        if mode is not None:
            (stage / relative).chmod(mode)
    for relative in files:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / relative, target)


@contextlib.contextmanager
def atomic_file_set(destination: Path | str, *, last: Sequence[str] = ()) -> Iterator[Path]:
    """Yield a temporary sibling directory to write a set of files into; publish it whole.

    When the block succeeds and `destination` does not exist yet, the directory is renamed into
    place in one step. When it exists (earlier pages, other files), each new file is renamed
    over its old version, the names in `last` (relative paths: the index pages) at the end, so
    an index never links to a page that is not there. When the block fails (an interrupt, a
    full disk) nothing in `destination` has changed.
    """
    destination = Path(destination)
    try:
        # a link to a folder elsewhere: stage beside the folder itself (the same file system)
        destination = _resolve(destination)
        if destination.exists() and not destination.is_dir():
            raise OutputError(f"cannot write into {destination}: it is not a directory")
        stage = _temp_directory(destination)
    except OSError as error:
        raise _cannot(destination, error) from None
    try:
        yield stage
        pause_at(f"publish {destination.name}")
        # The renames are not cut by a signal: it comes after them, the set whole.
        with deferred_signals():
            if not destination.exists():
                os.replace(stage, destination)
            else:
                pause_at(f"publishing {destination.name}")
                _move_into(stage, destination, last)
    except OSError as error:
        raise _cannot(destination, error) from None
    finally:
        with deferred_signals():
            shutil.rmtree(stage, ignore_errors=True)


def write_file_set(destination: Path | str, contents: Mapping[str, str | bytes], *,
                   last: Sequence[str] = ()) -> list[Path]:
    """Write `contents` (relative path -> text or bytes) as one set with `atomic_file_set`;
    return the paths written."""
    with atomic_file_set(destination, last=last) as stage:
        for name, content in contents.items():
            path = stage / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
    return [Path(destination) / name for name in contents]
