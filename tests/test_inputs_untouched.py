"""No command writes its input: an output that is an input (by name, through a symbolic link,
or as a hard link) is refused in one line, and the input keeps its bytes and its inode."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import NAIVE_SMEM_REPORT
from test_writeup_run import make_run

from harness.cli import main

REPORT = NAIVE_SMEM_REPORT


def _state(path: Path) -> tuple[int, bytes]:
    return path.stat().st_ino, path.read_bytes()


@pytest.fixture
def report(tmp_path: Path) -> Path:
    copy = tmp_path / "r.ncu-rep"
    shutil.copyfile(REPORT, copy)
    return copy


def _refused(args: list[str], victim: Path) -> None:
    before = _state(victim)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("ncuh: error: cannot write ") and line.endswith(
        "an input of this command (inputs are never written)")
    assert _state(victim) == before


@pytest.mark.parametrize("how", ["itself", "symlink", "hardlink"])
def test_export_never_writes_its_report(report: Path, tmp_path: Path, how: str) -> None:
    out = {"itself": report, "symlink": tmp_path / "link.csv",
           "hardlink": tmp_path / "hard.csv"}[how]
    if how == "symlink":
        out.symlink_to(report)
    elif how == "hardlink":
        out.hardlink_to(report)
    _refused(["export", str(report), "-o", str(out)], report)


def test_export_of_a_run_never_writes_its_reports_but_may_remake_its_table(
    tmp_path: Path,
) -> None:
    run = make_run(tmp_path)
    _refused(["export", str(run), "-o", str(run / "naive_1024.ncu-rep")],
             run / "naive_1024.ncu-rep")
    _refused(["export", str(run), "-o", str(run / "manifest.json")], run / "manifest.json")
    result = CliRunner().invoke(main, ["export", str(run), "-o", str(run / "metrics.csv")])
    assert result.exit_code == 0, result.output  # metrics.csv is the run's export, not an input
    assert (run / "metrics.csv").read_text().startswith("label,")


def test_diff_never_writes_its_sides(tmp_path: Path, report: Path) -> None:
    run = make_run(tmp_path)
    _refused(["diff", str(run), str(report), "--out", str(run / "bench.json")],
             run / "bench.json")
    _refused(["diff", str(run), str(report), "--out", str(report)], report)
