"""`harness.util.made_at_once`: items made by this process and forked children, in order."""

from __future__ import annotations

import os

import pytest

from harness.util import made_at_once


def _numbered(index: int) -> bytes:
    return f"item {index} from {os.getpid()}\n".encode()


def test_items_come_back_in_order_whoever_made_them() -> None:
    here = os.getpid()
    made_by_a_child, told = os.pipe()

    def numbered(index: int) -> bytes:
        if os.getpid() != here:
            os.write(told, b"x")
        elif not waited:  # this process makes nothing before a child has made an item
            os.read(made_by_a_child, 1)
            waited.append(True)
        return _numbered(index)

    waited: list[bool] = []
    try:
        items = [bytes(item) for item in made_at_once(9, numbered, 3)]
    finally:
        os.close(made_by_a_child)
        os.close(told)
    assert [item.split()[1] for item in items] == [str(i).encode() for i in range(9)]
    makers = {item.split()[3] for item in items}
    assert len(makers) > 1 and str(here).encode() in makers


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

    with pytest.raises(ValueError, match="item 5"):
        made_at_once(8, broken, 3)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every child was reaped
