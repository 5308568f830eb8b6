"""The sample program run in reports/runs/ (transformer-step-h200-first-pass): the ranking ncuh
makes of the eager transformer step's real first pass (tests/fixtures/program/), before any
kernel was profiled again. It is built here, as `ncuh profile --top` builds a run, from ncu's
own raw page of that first pass, and the committed one must be exactly what ncuh ranks.

To write it again: `python tests/test_program_sample.py` from the repository root.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))  # run as a script, as under pytest

from program_support import ENVIRONMENT
from test_program_first_pass import profile_on_the_eager_first_pass
from test_program_top import NCU

from harness.cli import main
from harness.rundir import load_run

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "reports" / "runs" / "transformer-step-h200-first-pass"
TOP = 5
# the fixture's program, as tests/fixtures/program/README.md records it
PROGRAM = ["python3", "examples/transformer_step.py", "--steps", "2", "--warmup", "1"]
RECORDED = ["ncu", "--metrics", "gpu__time_duration.sum", "--clock-control", "none",
            "--cache-control", "none", "--config-file", "off", "--nvtx", "-o", "first_eager",
            *PROGRAM]
FIRST_PASS_S = 17.0  # the eager program under the first pass (tests/fixtures/program/timings.txt)


def build(out: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample: `ncuh profile --top 5 --nvtx-include step/ --clock-control none` on the
    recorded first pass, kept as the first pass left it (its ranking; no kernel profiled)."""
    monkeypatch.setenv("NCUH_CACHE_DIR", str(out / "cache"))
    result, _ = profile_on_the_eager_first_pass(
        monkeypatch, "--top", str(TOP), "--nvtx-include", "step/", "--clock-control", "none",
        "--out", str(out / "runs"), "--", *PROGRAM)
    assert result.exit_code == 0, result.output
    run = Path(result.stdout.splitlines()[-1]).rename(out / SAMPLE.name)
    manifest = json.loads((run / "manifest.json").read_text())
    for path in run.iterdir():  # the stand-in's reports: only the ranking is the GPU's
        if path.name != "manifest.json":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    manifest["entries"] = []
    # what was run: the fixture's own first pass (what ncuh's first pass collects), at the time
    # recorded in its README; nothing timed here is the GPU's
    manifest["ncu"]["command_lines"] = [RECORDED]
    manifest.update(git_commit=None, started_at=None, finished_at=None, timings=None)
    manifest["ranking"]["export_command_lines"] = [
        [f"{SAMPLE.name}/ranking.ncu-rep" if word.endswith("/ranking.ncu-rep") else word
         for word in argv]
        for argv in manifest["ranking"]["export_command_lines"]]
    manifest["environment"] = dict(ENVIRONMENT, ncu_path=str(NCU))
    manifest["ranking"]["report"] = None  # 78 MB, not committed (tests/fixtures/program/)
    manifest["ranking"]["seconds"] = FIRST_PASS_S
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return run


def _comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the sample holds of ncuh's ranking (times and paths are the machine's)."""
    return {key: manifest[key] for key in ("ranking", "program", "entries", "environment")}


def test_the_sample_is_ncuhs_ranking_of_the_recorded_first_pass(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built = json.loads((build(tmp_path, monkeypatch) / "manifest.json").read_text())
    committed = json.loads((SAMPLE / "manifest.json").read_text())
    assert _comparable(committed) == _comparable(built)
    (process,) = load_run(SAMPLE).record.ranking.processes
    assert (process.launches, round(process.total_ns), len(process.kernels)) == (
        646, 6_081_120, 80)


def test_the_sample_writes_up_its_ranking_and_says_no_kernel_was_profiled(
        tmp_path: Path, golden: Any) -> None:
    result = CliRunner().invoke(main, ["writeup", str(SAMPLE), "--out", str(tmp_path / "w"),
                                       "--format", "md"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    index = (tmp_path / "w" / "index.md").read_text()
    rows = [line for line in index.splitlines() if re.match(r"\| [1-5] \|", line)]
    assert len(rows) == TOP
    assert rows[0].startswith("| 1 | nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT | 2x64x1 | "
                              "384x1x1 | 26 |")
    assert all(row.endswith("| not judged: not profiled: no entry of the run holds it |")
               for row in rows)
    assert "| | 75 more kernels |" in index
    golden("index", index)


if __name__ == "__main__":
    with pytest.MonkeyPatch.context() as patch, \
            __import__("tempfile").TemporaryDirectory() as scratch:
        made = build(Path(scratch), patch)
        shutil.rmtree(SAMPLE, ignore_errors=True)
        shutil.copytree(made, SAMPLE)
    print(SAMPLE)
