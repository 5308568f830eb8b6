"""Run directories are data: writing them up, exporting, diffing or merging them never imports
a module they name or carry. Only a project the user names with --project runs code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_writeup_run import make_run

from harness.cli import main

SCALE = Path(__file__).parent / "projects" / "scale"


def _trap(run: Path, marker: Path) -> None:
    """Give `run` a project of its own (ncuh.toml + module) whose import leaves `marker`, and
    a manifest that names it, as a run made to attack whoever writes it up would."""
    for name in ("ncuh.toml", "scale.cu", "scale_common.cuh", "notes"):
        source = SCALE / name
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, run / name)
    module = (SCALE / "scale_project.py").read_text()
    (run / "scale_project.py").write_text(
        module + f"\nfrom pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["project"] = {"name": "scale-test", "path": str(run / "ncuh.toml")}
    (run / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture
def trapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    run = make_run(tmp_path)
    marker = tmp_path / "marker"
    _trap(run, marker)
    monkeypatch.chdir(run)  # the run's ncuh.toml is the one found from here, too
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    return run, marker


def _ok(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", ["writeup", "export", "diff", "merge"])
def test_no_command_on_a_run_imports_what_it_names(
    trapped: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    run, marker = trapped
    out = tmp_path / "out"
    args = {
        "writeup": ["writeup", str(run), "--out", str(out), "--format", "md"],
        "export": ["export", str(run), "-o", str(out)],
        "diff": ["diff", str(run), str(run), "--format", "json"],
        "merge": ["merge", str(run), "--out", str(out)],
    }[command]
    _ok(*args)
    assert not marker.exists()
    assert command == "diff" or out.exists()


def test_only_project_runs_the_project_code(trapped: tuple[Path, Path], tmp_path: Path) -> None:
    # without --project the same writeup imports nothing (test_no_command_on_a_run_...)
    run, marker = trapped
    _ok("writeup", str(run), "--out", str(tmp_path / "again"), "--format", "md",
        "--project", str(run))
    assert marker.read_text() == "imported"  # the trap is real: --project does run it
    page = (tmp_path / "again" / "index.md").read_text()
    assert "CuPy multiply" in page


def test_ncuh_project_before_the_command_is_as_explicit(trapped: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    run, marker = trapped
    _ok("--project", str(run), "writeup", str(run), "--out", str(tmp_path / "pages"),
        "--format", "md")
    assert marker.read_text() == "imported"


def test_ncuh_project_in_the_environment_does_not_load_a_project_for_writeup(
    trapped: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, marker = trapped
    monkeypatch.setenv("NCUH_PROJECT", str(run))
    _ok("writeup", str(run), "--out", str(tmp_path / "pages"), "--format", "md")
    assert not marker.exists()


def test_writeup_help_says_only_project_runs_code() -> None:
    result = CliRunner().invoke(main, ["writeup", "--help"])
    text = " ".join(result.output.split())
    assert "never imports" in text and "only --project" in text


def test_an_older_manifest_gives_plainer_pages_and_runs_nothing(
    trapped: tuple[Path, Path], tmp_path: Path
) -> None:
    run, marker = trapped
    manifest = json.loads((run / "manifest.json").read_text())
    assert "chain" not in manifest["project"]  # an older manifest: the pages say less
    _ok("writeup", str(run), "--out", str(tmp_path / "pages"), "--format", "md")
    assert "Iteration 0" not in (tmp_path / "pages" / "index.md").read_text()
    assert not marker.exists()
