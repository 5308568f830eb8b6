"""Every ```python example of docs/python.md runs, in order, on the shipped fixtures (```py
blocks need a GPU and are only compiled)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(), re.DOTALL | re.MULTILINE)


def test_the_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    os.symlink(ROOT / "reports", tmp_path / "reports")  # the paths the page names, from a checkout
    monkeypatch.chdir(tmp_path)
    examples = blocks("python")
    assert len(examples) == 5
    namespace: dict = {}
    for code in examples:
        exec(compile(code, str(PAGE), "exec"), namespace)
    shown = capsys.readouterr().out
    assert "report\n['sgemm_register_tiled']\n" in shown
    assert (tmp_path / "runs" / "api-pages" / "index.html").is_file()
    assert namespace["text"].startswith("# Kernels\n")
    assert "warp_shuffle_67108864" in shown


def test_the_gpu_examples_compile() -> None:
    examples = blocks("py")
    assert len(examples) == 3
    for code in examples:
        compile(code, str(PAGE), "exec")
