"""The test suite keeps to its own rules: long prose is pinned in golden files (tests/golden/,
rewritten with `pytest --update-golden`), not in assert literals; every GPU test is in a
`test_*_gpu.py` module (the group pytest-xdist runs on one worker, tests/conftest.py); the
groups handed out first exist."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import COLLECTED, LONG_GROUPS, WORKER_GROUPS, worker_group

TESTS = Path(__file__).parent
# a word of prose: lower-case letters standing alone between spaces (no metric name, path or
# identifier), perhaps ending a clause
_WORD = re.compile(r"(?<!\S)[a-z]{2,}[,.;:]?(?!\S)")
LONGEST_PROSE = 80  # characters of an English literal an assert may hold


def is_prose(text: str) -> bool:
    """Whether a literal reads as English: six words or more of plain lower-case letters."""
    return len(_WORD.findall(text)) >= 6


def assert_literals(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each string literal in the tested expression of an `assert` (the
    message after the comma aside); an f-string counts as its literal parts."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        inside_fstrings = {id(part) for sub in ast.walk(node.test)
                           if isinstance(sub, ast.JoinedStr) for part in sub.values}
        for sub in ast.walk(node.test):
            if isinstance(sub, ast.JoinedStr):
                yield sub.lineno, "".join(part.value for part in sub.values
                                          if isinstance(part, ast.Constant))
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) \
                    and id(sub) not in inside_fstrings:
                yield sub.lineno, sub.value


def long_prose(limit: int) -> list[str]:
    """`file:line: text` of every assert literal in tests/ of prose longer than `limit`."""
    found = []
    for path in sorted(TESTS.glob("test_*.py")):
        for line, text in assert_literals(path.read_text(encoding="utf-8")):
            if len(text) > limit and is_prose(text):
                found.append(f"{path.name}:{line}: {text[:70]!r}")
    return found


def test_no_assert_pins_a_long_english_sentence() -> None:
    assert long_prose(LONGEST_PROSE) == [], "pin prose with the `golden` fixture"


def test_the_prose_finder_tells_prose_from_names() -> None:
    sentence = "Global loads and stores are uncoalesced: 84.9% of the sectors moved."
    assert is_prose(sentence)
    assert not is_prose("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")
    assert not is_prose("| SM: Inst Executed Pipe Lsu | % | 5.81 |")
    source = 'assert x == "a b c d e f g", "the message is not pinned by the test at all"\n' \
             'assert f"{a} is not a header NVRTC has" in y\n'
    assert list(assert_literals(source)) == [(1, "a b c d e f g"),
                                             (2, " is not a header NVRTC has")]


def test_the_long_groups_handed_out_first_exist() -> None:
    for group in LONG_GROUPS:
        assert group in WORKER_GROUPS or (TESTS.parent / group).is_file(), group


def test_every_gpu_test_is_in_the_gpu_group(request: pytest.FixtureRequest) -> None:
    marking = sorted(path.relative_to(TESTS).as_posix() for path in TESTS.rglob("test_*.py")
                     if re.search(r"\bmark\.gpu\b", path.read_text(encoding="utf-8")))
    assert len(marking) >= 8
    for module in marking:
        assert worker_group(f"tests/{module}::test_x") == "gpu", module
    assert worker_group("tests/test_profile_gpus.py::test_x") == "tests/test_profile_gpus.py"
    # and what this run collected (all of tests/ in a whole run)
    for nodeid, marked_gpu in request.config.stash[COLLECTED]:
        assert (worker_group(nodeid) == "gpu") == marked_gpu, nodeid
