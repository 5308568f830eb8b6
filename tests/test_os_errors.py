"""OS failures on output and input: one line on stderr, exit status 2, nothing half-written.

Output: read-only file system, permission denied, disk full, a name too long (and a legal
name that only the hidden temporary name would have pushed past NAME_MAX), a path under a
file, a directory where a file should go, /dev/full. Input: a path too long, a FIFO, a device,
a socket (refused before opening: never a hang). Writing through a symbolic link, keeping an
overwritten file's permissions, and writeup's pages published as one set.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import H200_NAIVE, NAIVE_SMEM_REPORT

from harness.cli import main
from harness.errors import OutputError
from harness.util import atomic
from harness.util.atomic import atomic_file_set, atomic_path, atomic_write_text

REPORT = H200_NAIVE
REPO = Path(__file__).resolve().parents[1]
NAME_MAX = os.pathconf("/tmp", "PC_NAME_MAX")


def one_line_error(result, *phrases: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for phrase in phrases:
        assert phrase.lower() in lines[0].lower(), lines[0]
    return lines[0]


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- output ----------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES, errno.ENOSPC, errno.EDQUOT])
def test_export_os_failure_while_writing_is_one_line(tmp_path, monkeypatch, code) -> None:
    from harness.report.export_format import Exported

    def fail_midway(self, stream) -> None:  # the command's own atomic output, failing mid-table
        stream.write(b"kernel_id,kernel\n")
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(Exported, "write", fail_midway)
    out = tmp_path / "m.csv"
    line = one_line_error(invoke("export", REPORT, "-o", out), str(out), os.strerror(code))
    assert line.startswith("ncuh: error: cannot write")
    assert list(tmp_path.iterdir()) == []  # no half file, no temporary file


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_diff_output_in_a_folder_that_refuses_files(tmp_path, monkeypatch, code) -> None:
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)
    one_line_error(invoke("diff", REPORT, REPORT, "--out", tmp_path / "d.md"),
                   os.strerror(code))


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits")
def test_real_read_only_folder(tmp_path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    one_line_error(invoke("export", REPORT, "-o", folder / "m.csv"), "Permission denied")


def test_dev_full_is_refused_not_replaced(tmp_path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    one_line_error(invoke("export", REPORT, "-o", "/dev/full"), "character device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_name_too_long_is_one_line(tmp_path) -> None:
    out = tmp_path / ("n" * (NAME_MAX + 1))
    one_line_error(invoke("export", REPORT, "-o", out), "file name too long")
    one_line_error(invoke("diff", REPORT, REPORT, "--out", out), "file name too long")
    one_line_error(invoke("writeup", REPORT, "--out", out), "file name too long")


def test_longest_legal_name_is_written_despite_the_temporary_name(tmp_path) -> None:
    out = tmp_path / ("n" * NAME_MAX)  # ".<name>.XXXXXXXX.tmp" would not fit: it is cut
    assert atomic_write_text(out, "whole") == out and out.read_text() == "whole"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    result = invoke("export", REPORT, "-o", tmp_path / ("m" * NAME_MAX))
    assert result.exit_code == 0, result.output


def test_path_under_a_file_is_one_line(tmp_path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    one_line_error(invoke("export", REPORT, "-o", blocker / "m.csv"), "not a directory")
    one_line_error(invoke("diff", REPORT, REPORT, "--out", blocker / "sub" / "d.md"),
                   "not a directory")
    one_line_error(invoke("writeup", REPORT, "--out", blocker), "not a directory")
    assert blocker.read_text() == "x"


def test_existing_directory_where_a_file_is_expected(tmp_path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    one_line_error(invoke("export", REPORT, "-o", folder), "is a directory")
    one_line_error(invoke("diff", REPORT, REPORT, "--out", folder), "is a directory")


def test_output_through_a_symlink_writes_its_target(tmp_path) -> None:
    target = tmp_path / "real" / "m.csv"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert invoke("export", REPORT, "-o", link).exit_code == 0
    assert link.is_symlink() and target.read_text().startswith("kernel_id,kernel,metric")
    assert leftovers(target.parent) == [] and leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_overwriting_keeps_the_file_permissions(tmp_path, mode) -> None:
    out = tmp_path / "d.md"
    out.write_text("old")
    out.chmod(mode)
    assert invoke("diff", REPORT, REPORT, "--out", out).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == mode and out.read_text() != "old"


def test_new_file_gets_the_umask_mode(tmp_path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "new.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640


def test_atomic_path_turns_oserror_into_output_error(tmp_path) -> None:
    with pytest.raises(OutputError, match="No space left"), atomic_path(tmp_path / "x") as tmp:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert list(tmp_path.iterdir()) == []


# --- writeup: one set --------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def first_writeup(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pages") / "site"
    assert invoke("writeup", REPORT, "--out", out, "--format", "md").exit_code == 0
    return out


@pytest.mark.parametrize("failure", ["disk full", "interrupt"])
def test_writeup_failure_leaves_the_previous_pages_whole(tmp_path, monkeypatch, first_writeup,
                                                         failure) -> None:
    out = tmp_path / "site"
    out.mkdir()
    for name, data in _snapshot(first_writeup).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    before = _snapshot(out)
    written: list[str] = []
    real_write_text = Path.write_text

    def write_text(self: Path, *args, **kwargs):
        written.append(self.name)
        if len(written) == 2:  # the index went first into the stage; fail on the next page
            if failure == "interrupt":
                raise KeyboardInterrupt
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    result = invoke("writeup", NAIVE_SMEM_REPORT, "--out", out, "--format", "md")
    if failure == "interrupt":  # Ctrl-C: status 128 + SIGINT, one line
        assert result.exit_code == 130 and result.output == "ncuh: interrupted\n"
    else:
        one_line_error(result, str(out), "No space left on device")
    assert _snapshot(out) == before  # nothing changed: no index linking to missing pages
    assert leftovers(tmp_path) == []  # the staging folder is gone


def test_writeup_over_existing_pages_keeps_other_files_and_links_resolve(tmp_path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert invoke("writeup", NAIVE_SMEM_REPORT, "--out", out, "--format", "md").exit_code == 0
    assert (out / "notes.txt").read_text() == "mine"
    index = (out / "index.md").read_text()
    for link in __import__("re").findall(r"\]\(([^)]+\.(?:md|png))\)", index):
        assert (out / link).is_file(), link
    assert leftovers(tmp_path) == []


def test_file_set_moves_the_index_last(tmp_path, monkeypatch) -> None:
    out = tmp_path / "site"
    out.mkdir()
    moved: list[str] = []
    real_replace = os.replace

    def replace(src, dst):
        moved.append(Path(dst).name)
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    with atomic_file_set(out, last=["index.md"]) as stage:
        for name in ("index.md", "a.md", "z.md"):
            (stage / name).write_text(name)
    assert moved == ["a.md", "z.md", "index.md"]


# --- input ---------------------------------------------------------------------------------


COMMANDS = [["report", "{p}"], ["export", "{p}"], ["diff", "{p}", str(REPORT)],
            ["diff", str(REPORT), "{p}"], ["writeup", "{p}", "--out", "{tmp}/w"],
            ["diff", str(REPORT), str(REPORT), "--config", "{p}"]]


@pytest.mark.parametrize("args", COMMANDS)
def test_input_path_too_long_is_one_line(tmp_path, args) -> None:
    long_path = tmp_path / ("x" * (NAME_MAX + 10) + ".ncu-rep")
    argv = [a.format(p=long_path, tmp=tmp_path) for a in args]
    one_line_error(invoke(*argv), "too long")


def _special(kind: str, folder: Path) -> Path:
    if kind == "fifo":
        path = folder / "pipe.ncu-rep"
        os.mkfifo(path)
    elif kind == "socket":
        path = folder / "sock.ncu-rep"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        folder.joinpath(".keep").write_text("")  # keep `server` referenced by the folder's life
        _SOCKETS.append(server)
    else:
        path = Path("/dev/zero")
    return path


_SOCKETS: list[socket.socket] = []


@pytest.mark.parametrize("args", COMMANDS)
def test_a_fifo_is_refused_without_hanging(tmp_path, args) -> None:
    path = _special("fifo", tmp_path)
    argv = [a.format(p=path, tmp=tmp_path) for a in args]
    # a real process with a timeout: opening a FIFO would block until a writer comes
    completed = subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True,
                               text=True, timeout=60, cwd=REPO)
    assert completed.returncode == 2, completed
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "FIFO" in lines[0] and "Traceback" not in completed.stderr


@pytest.mark.parametrize("kind,words", [("socket", "socket"), ("device", "character device")])
@pytest.mark.parametrize("args", COMMANDS)
def test_sockets_and_devices_are_refused(tmp_path, kind, words, args) -> None:
    path = _special(kind, tmp_path)
    argv = [a.format(p=path, tmp=tmp_path) for a in args]
    one_line_error(invoke(*argv), words)


def test_writeup_into_a_linked_folder_writes_the_folder(tmp_path) -> None:
    real = tmp_path / "elsewhere" / "site"
    real.mkdir(parents=True)
    link = tmp_path / "site"
    link.symlink_to(real, target_is_directory=True)
    assert invoke("writeup", REPORT, "--out", link, "--format", "md").exit_code == 0
    assert link.is_symlink() and (real / "index.md").is_file()
    assert leftovers(tmp_path) == [] and leftovers(real.parent) == []
