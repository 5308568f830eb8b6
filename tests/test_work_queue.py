"""`harness.util.made_at_once`: items made by this process and forked children, in order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.util import made_at_once
from harness.util.work_queue import forked

ROOT = Path(__file__).resolve().parent.parent


def _numbered(index: int) -> bytes:
    return f"item {index} from {os.getpid()}\n".encode()


_IN_ORDER = """
import os
from harness.util import made_at_once
here = os.getpid()
made_by_a_child, told = os.pipe()
waited = []

def numbered(index):
    if os.getpid() != here:
        os.write(told, b"x")
    elif not waited:  # this process makes nothing before a child has made one
        os.read(made_by_a_child, 1)
        waited.append(True)
    return b"%d %d" % (index, os.getpid())

items = [bytes(item).split() for item in made_at_once(9, numbered, 3)]
assert [int(index) for index, _ in items] == list(range(9)), items
# whichever process took which items, a child made at least one
assert {int(maker) for _, maker in items} - {here}, items
print("in order")
"""


def test_items_come_back_in_order_whoever_made_them() -> None:
    # in a process of its own: one holding no other thread, as `ncuh` is
    done = subprocess.run([sys.executable, "-c", _IN_ORDER], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.stdout.strip() == "in order", done.stderr


def test_one_job_or_one_item_is_made_here() -> None:
    here = str(os.getpid()).encode()
    assert all(bytes(item).split()[3] == here for item in made_at_once(4, _numbered, 1))
    assert bytes(made_at_once(1, _numbered, 8)[0]).split()[3] == here
    assert made_at_once(0, _numbered, 8) == []


def test_an_item_a_child_failed_to_make_is_made_here() -> None:
    here = os.getpid()

    def only_here(index: int) -> bytes:
        if os.getpid() != here and index % 2:
            raise RuntimeError("failed in a child")
        return _numbered(index)

    items = [bytes(item) for item in made_at_once(8, only_here, 2)]
    assert [item.split()[1] for item in items] == [str(i).encode() for i in range(8)]
    assert all(item.split()[3] == str(here).encode() for item in items[1::2])


def test_an_item_that_fails_here_too_is_raised_and_no_child_is_left() -> None:
    def broken(index: int) -> bytes:
        if index == 5:
            raise ValueError("item 5 cannot be made")
        return _numbered(index)

    before = _living_children()
    with pytest.raises(ValueError, match="item 5"):
        made_at_once(8, broken, 3)
    assert _living_children() <= before  # every child it forked was ended and reaped


def _living_children() -> set[int]:
    """This process's children, running or waiting to be reaped (/proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = stat.read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if int(parent) == os.getpid():
            found.add(int(stat.parent.name))
    return found


def test_more_items_than_a_pipe_holds_are_made_though_every_child_fails() -> None:
    here = os.getpid()

    def only_here(index: int) -> bytes:
        if os.getpid() != here:
            raise RuntimeError("failed in a child")
        return b"%d" % index

    # 4 bytes an index: 20,000 of them are more than a 64 KiB pipe holds
    items = made_at_once(20_000, only_here, 2)
    assert len(items) == 20_000 and bytes(items[-1]) == b"19999"


def test_the_first_failing_item_is_raised_whoever_met_it() -> None:
    def broken(index: int) -> bytes:
        if index in (1, 3):
            raise ValueError(f"item {index} cannot be made")
        return _numbered(index)

    for _ in range(5):  # whichever process takes 1 and 3, it is item 1 that is told
        with pytest.raises(ValueError, match="item 1 "):
            made_at_once(6, broken, 2)


def test_a_childs_file_cut_short_gives_its_whole_items_only(tmp_path: Path) -> None:
    from harness.util.work_queue import _ITEM, _delivered

    whole = _ITEM.pack(4, 3) + b"abc" + _ITEM.pack(7, 2) + b"de"
    (tmp_path / "cut").write_bytes(whole + _ITEM.pack(9, 5) + b"fg")
    assert [(i, bytes(v)) for i, v in _delivered(tmp_path / "cut")] == [(4, b"abc"), (7, b"de")]
    assert list(_delivered(tmp_path / "missing")) == []


def test_a_forked_child_ends_with_its_own_status() -> None:
    def fails() -> None:
        raise RuntimeError("in the child")

    statuses = []
    for child in (lambda: None, fails):
        _, status = os.waitpid(forked(child), 0)
        statuses.append(os.waitstatus_to_exitcode(status))
    assert statuses == [0, 1]
