"""Atomic outputs: whole or absent, and readable like any other file."""

from __future__ import annotations

import os
import stat

import pytest

from harness.util.atomic import atomic_directory, atomic_write_text


def test_atomic_file_gets_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "page.md", "hello")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_text() == "hello"


def test_interrupted_file_write_leaves_nothing(tmp_path):
    from harness.util.atomic import atomic_path

    with pytest.raises(KeyboardInterrupt), atomic_path(tmp_path / "out.csv") as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_atomic_directory_is_renamed_when_complete_and_removed_when_not(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_directory(tmp_path / "run") as tmp:
            assert tmp.name.endswith(".incomplete")
            (tmp / "manifest.json").write_text("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o755
    with pytest.raises(RuntimeError), atomic_directory(tmp_path / "run2"):
        raise RuntimeError("crash")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.parametrize("parent_there", [True, False])
def test_a_failed_directory_takes_the_folder_it_made_for_it_along(tmp_path, parent_there):
    out = tmp_path / "runs"
    if parent_there:
        out.mkdir()
    with pytest.raises(RuntimeError), atomic_directory(out / "run-1") as tmp:
        (tmp / "half.txt").write_text("half")
        raise RuntimeError("stopped")
    # a folder that was there stays; one made for this run goes with it
    assert out.exists() is parent_there
    assert not list(out.iterdir()) if parent_there else True


def test_a_folder_made_for_a_failed_directory_stays_when_another_wrote_there(tmp_path):
    out = tmp_path / "runs"
    with pytest.raises(RuntimeError), atomic_directory(out / "run-1"):
        (out / "someone-else").write_text("theirs")
        raise RuntimeError("stopped")
    assert [p.name for p in out.iterdir()] == ["someone-else"]
