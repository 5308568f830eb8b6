"""Fixtures packed one archive a folder: tests/pack_fixtures.py packs them (the same files to the
same bytes, bad input one line and status 2), tests/packed_fixtures.py unpacks a folder once per
test run (a process that loses the race uses the winner's folder)."""

from __future__ import annotations

import lzma
import subprocess
import sys
from pathlib import Path

import packed_fixtures
import pytest
from pack_fixtures import ARCHIVE, members, write
from packed_fixtures import FIXTURES, fixture, reports, unpacked

PACK = Path(__file__).parent / "pack_fixtures.py"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "zoo"
    folder.mkdir()
    write(folder / ARCHIVE, {"b.ncu-rep": b"report b", "b.raw.csv": b"page of b"})
    (folder / "a.ncu-rep.xz").write_bytes(lzma.compress(b"report a"))
    (folder / "b.log").write_text("log of b")
    return folder


def test_a_folder_is_unpacked_with_its_plain_files_beside(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    where = unpacked(folder)
    assert sorted(path.name for path in where.iterdir()) == [
        "a.ncu-rep", "b.log", "b.ncu-rep", "b.raw.csv"]
    assert [path.read_bytes() for path in reports(folder)] == [b"report a", b"report b"]
    assert fixture(folder / "b.log") == folder / "b.log"  # committed as it is: read there
    assert fixture(folder / "b.raw.csv").read_bytes() == b"page of b"
    with pytest.raises(FileNotFoundError):
        fixture(folder / "c.ncu-rep")


def test_a_process_that_loses_the_race_uses_the_winners_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    fill = packed_fixtures._fill

    def winner_first(source: Path, into: Path) -> None:
        # another process finishes first, while this one writes its own copy
        target = into.parent / into.name.split(".")[1]
        target.mkdir()
        (target / "b.ncu-rep").write_bytes(b"the winner's")
        fill(source, into)

    monkeypatch.setattr(packed_fixtures, "_fill", winner_first)
    where = unpacked(folder)
    assert (where / "b.ncu-rep").read_bytes() == b"the winner's"
    assert sorted(path.name for path in where.parent.iterdir()
                  if path.name.startswith(".")) == []  # the loser's copy is gone


def test_the_same_files_pack_to_the_same_bytes(tmp_path: Path) -> None:
    for name in ("a.raw.csv", "b.details.txt"):
        (tmp_path / name).write_text(f"ncu's page {name}\n")
    first = tmp_path / "one"
    first.mkdir()
    subprocess.run([sys.executable, str(PACK), str(first), str(tmp_path / "a.raw.csv")],
                   check=True, capture_output=True)
    subprocess.run([sys.executable, str(PACK), str(first), str(tmp_path / "b.details.txt")],
                   check=True, capture_output=True)
    assert not (tmp_path / "a.raw.csv").exists()  # moved in
    assert members(first / ARCHIVE) == {"a.raw.csv": b"ncu's page a.raw.csv\n",
                                        "b.details.txt": b"ncu's page b.details.txt\n"}
    second = tmp_path / "two"
    second.mkdir()
    write(second / ARCHIVE, members(first / ARCHIVE))
    assert (second / ARCHIVE).read_bytes() == (first / ARCHIVE).read_bytes()


@pytest.mark.parametrize("args,line", [
    ([], "usage: python3 tests/pack_fixtures.py FOLDER [FILE...]"),
    (["nowhere"], "pack_fixtures: nowhere is not a folder"),
    ([".", "missing.ncu-rep"], "pack_fixtures: no such file: missing.ncu-rep"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path: Path, args: list[str], line: str) -> None:
    done = subprocess.run([sys.executable, str(PACK), *args], cwd=tmp_path,
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")
    assert list(tmp_path.iterdir()) == []


def test_files_it_would_lose_or_could_not_read_are_refused_and_nothing_changes(
        tmp_path: Path) -> None:
    """Two files of one name (one would be packed, both removed), a file that is no report or
    page, and an archive that cannot be read: each one line, status 2, every file as it was."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.raw.csv").write_text(f"page {folder}\n")
    (tmp_path / "notes.txt").write_text("kept as it is\n")
    (tmp_path / ARCHIVE).write_bytes(b"not an archive")
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    cases = [(["a/x.raw.csv", "b/x.raw.csv"], "pack_fixtures: x.raw.csv named twice: "),
             (["notes.txt"], "pack_fixtures: notes.txt: only .ncu-rep, "),
             (["a/x.raw.csv"], f"pack_fixtures: {ARCHIVE} cannot be read (")]
    for files, start in cases:
        done = subprocess.run([sys.executable, str(PACK), ".", *files], cwd=tmp_path,
                              capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1), files
        assert done.stderr.startswith(start), done.stderr
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


def test_every_fixture_folder_unpacks_its_reports_and_pages() -> None:
    assert len(reports(FIXTURES / "zoo")) == 44
    assert sorted(path.name for path in unpacked(FIXTURES / "program").glob("first_*")) == [
        f"first_{mode}.{kind}" for mode in ("compile", "eager", "graph")
        for kind in ("held.csv", "raw.csv")]
