"""A report that does not hold the kernel its manifest names is never written up or diffed as
that variant: the page and the diff name the kernel it holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import H200_NAIVE, H200_REGISTER_TILED, H200_RUN

from harness.cli import main
from harness.pages.writeup import collect

FIXTURES = Path(__file__).parent / "fixtures"


def _run(root: Path, name: str, *, swapped: bool) -> Path:
    """The committed H200 run (naive and register_tiled at 256); `swapped`: the naive entry's
    report holds register_tiled's kernel."""
    run = root / name
    run.mkdir()
    shutil.copyfile(H200_RUN / "manifest.json", run / "manifest.json")
    shutil.copyfile(H200_REGISTER_TILED if swapped else H200_NAIVE, run / "naive_256.ncu-rep")
    shutil.copyfile(H200_REGISTER_TILED, run / "register_tiled_256.ncu-rep")
    return run


def test_the_page_names_the_kernel_the_report_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], golden
) -> None:
    run = _run(tmp_path, "run", swapped=True)
    pages = collect([run]).pages
    assert [(p.heading, p.kernel_name) for p in pages] == [
        ("Iteration 4: Register Tiling", "sgemm_register_tiled"),
        ("naive (sgemm_register_tiled, not its kernel sgemm_naive)", "sgemm_register_tiled")]
    foreign = pages[1]
    assert foreign.iteration is None and foreign.strategy is None and not foreign.bench_rows
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"ncuh: warning: {run / 'naive_256.ncu-rep'}: ")
    golden("foreign_kernel_warning", line.replace(str(run), "RUN"))


def test_the_right_report_is_its_variant_page(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    pages = collect([_run(tmp_path, "run", swapped=False)]).pages
    assert [p.heading for p in pages] == ["Iteration 0: Naive",
                                          "Iteration 4: Register Tiling"]
    assert capsys.readouterr().err == ""


def test_diff_never_calls_another_kernel_the_variant(tmp_path: Path) -> None:
    baseline = _run(tmp_path, "baseline", swapped=False)
    current = _run(tmp_path, "current", swapped=True)
    result = CliRunner().invoke(main, ["diff", str(baseline), str(current), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("ncuh: warning: ") and "not sgemm_naive" in line
    # register_tiled against itself; naive is not compared with the other kernel: it is gone,
    # and the kernel the report holds appears under its own name
    assert [k["key"]["name"] for k in report["kernels"]] == ["register_tiled"]
    assert report["summary"]["faster"] == report["summary"]["slower"] == 0
    assert [k["key"]["name"] for k in report["removed"]] == ["naive"]
    assert [(k["key"]["name"], k["source"]) for k in report["added"]] == [
        ("sgemm_register_tiled", "naive_256.ncu-rep")]
