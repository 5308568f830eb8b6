"""The tracked tree speaks of the product: no development narrative in any file or path, and
module docstrings that say what a module does without measured seconds."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Spelt in two pieces, so that this file does not hold the word it looks for.
WORD = b"sess" + b"ion"
# Names that are not narrative: ncu's own metric, recorded in reports and their raw pages, and
# Python's subprocess keyword that starts a child in a process group of its own.
NAMES_ALLOWED = (b"profiler__perfworks_" + WORD + b"_reuse", b"start_new_" + WORD)
MAX_DOCSTRING_LINES = 15
MEASURED = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|seconds)\b")


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def _narrative(data: bytes) -> bool:
    data = data.lower()
    for name in NAMES_ALLOWED:
        data = data.replace(name, b"")
    return WORD in data


def test_narrative_finds_the_word_but_not_the_names_allowed() -> None:
    assert _narrative(b"Measured in " + WORD.title() + b" 11.")
    assert _narrative(b"start_new_" + WORD + b"=True; the " + WORD + b" of 2026")
    assert not _narrative(b"Popen(argv, start_new_" + WORD + b"=True)")
    assert not _narrative(b"profiler__perfworks_" + WORD + b"_reuse,1")


def test_no_tracked_path_names_the_word() -> None:
    assert [name for name in _tracked() if WORD.decode() in name.lower()] == []


def test_no_tracked_file_holds_the_word() -> None:
    found = [name for name in _tracked()
             if (ROOT / name).is_file() and _narrative((ROOT / name).read_bytes())]
    assert found == []


@pytest.mark.parametrize("module", sorted((ROOT / "harness").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_module_docstring_is_short_and_carries_no_measured_seconds(module: Path) -> None:
    docstring = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8")), clean=False)
    assert docstring, "a module says what it does"
    assert docstring.count("\n") + 1 <= MAX_DOCSTRING_LINES
    assert MEASURED.findall(docstring) == []
