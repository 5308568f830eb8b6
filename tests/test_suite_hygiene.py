"""The test suite keeps to its own rules: long prose is pinned in golden files (tests/golden/,
rewritten with `pytest --update-golden`), not in assert literals; GPU tests take turns; the
modules handed out first exist (tests/conftest.py); the fixtures stay small, their reports
packed, none a copy of a sample in reports/ (tests/fixtures/README.md)."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import COLLECTED, FIRST_MODULES, gpu_turn, run_folder
from pack_fixtures import ARCHIVE, PACKED_SUFFIXES, members

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


def test_the_modules_handed_out_first_exist() -> None:
    assert len(set(FIRST_MODULES)) == len(FIRST_MODULES)
    for module in FIRST_MODULES:
        assert (TESTS.parent / module).is_file(), module


def test_the_longest_modules_are_collected_first(request: pytest.FixtureRequest) -> None:
    modules = list(dict.fromkeys(nodeid.split("::")[0]
                                 for nodeid, _ in request.config.stash[COLLECTED]))
    first = [module for module in FIRST_MODULES if module in modules]
    assert modules[:len(first)] == first


def test_a_gpu_test_waits_for_the_gpu_test_running(tmp_path: Path) -> None:
    """While one process holds the GPU turn, another cannot take it."""
    probe = ("import fcntl, sys\n"
             "with open(sys.argv[1], 'a') as lock:\n"
             "    try:\n"
             "        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "    except BlockingIOError:\n"
             "        print('busy')\n"
             "    else:\n"
             "        print('free')\n")
    lock = str(run_folder() / "gpu.lock")
    with gpu_turn():
        held = subprocess.run([sys.executable, "-c", probe, lock], capture_output=True,
                              text=True, check=True).stdout
    after = subprocess.run([sys.executable, "-c", probe, lock], capture_output=True, text=True,
                           check=True).stdout
    assert (held, after) == ("busy\n", "free\n")


@pytest.mark.gpu
def test_a_gpu_test_runs_in_its_turn() -> None:
    """Runs where a GPU answers; elsewhere skips like every GPU test."""
    with pytest.raises(BlockingIOError), (run_folder() / "gpu.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _fixture_files() -> list[Path]:
    """The files of tests/fixtures a checkout carries (git's list, where there is one)."""
    listed = subprocess.run(["git", "-C", str(TESTS.parent), "ls-files", "tests/fixtures"],
                            capture_output=True, text=True, check=False).stdout.split()
    if listed:
        return [TESTS.parent / name for name in listed]
    return [path for path in (TESTS / "fixtures").rglob("*") if path.is_file()]


# what a folder keeps in its archive: reports and ncu's pages of them (tests/pack_fixtures.py)


def test_the_fixtures_stay_small_and_every_report_is_packed() -> None:
    files = _fixture_files()
    # the zoo (one report a kernel kind) is most of it
    assert sum(path.stat().st_size for path in files) <= 8 * 1024 * 1024
    archives = [path for path in files if path.name == ARCHIVE]
    assert [path.name for path in files if path.name.endswith(PACKED_SUFFIXES)] == []
    assert [path.name for path in files if path.suffix in (".xz", ".gz")
            and path not in archives] == []
    packed = {path.parent.name: members(path) for path in archives}
    assert sum(name.endswith(".ncu-rep") for names in packed.values() for name in names) >= 40
    # nothing but reports and ncu's pages of them is packed: the rest is read as committed
    assert [name for names in packed.values() for name in names
            if not name.endswith(PACKED_SUFFIXES)] == []


def test_no_fixture_is_a_copy_of_a_sample_in_reports() -> None:
    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    samples = {digest(path) for path in (TESTS.parent / "reports").rglob("*") if path.is_file()}
    assert [path.name for path in _fixture_files() if digest(path) in samples] == []
    packed = [(archive.parent.name, name, data) for archive in _fixture_files()
              if archive.name == ARCHIVE for name, data in members(archive).items()]
    assert len(packed) >= 100
    assert [f"{folder}/{name}" for folder, name, data in packed
            if hashlib.sha256(data).hexdigest() in samples] == []
