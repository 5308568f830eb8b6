"""The Python API (`harness.load`, `harness.api`) on the shipped fixtures, and the `ncuh_bench`
pytest fixture skipping cleanly without a GPU."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import NAIVE_SMEM_REPORT, REDUCTION_RUN

import harness
from harness.api import Result, load
from harness.cli import main
from harness.errors import ReportError

ROOT = Path(__file__).resolve().parents[1]


def test_import_harness_stays_cheap() -> None:
    code = ("import sys, harness; harness.__version__; "
            "print(sorted(m for m in ('pandas', 'ncu_report', 'cupy', 'harness.api.result', "
            "'matplotlib', 'pydantic') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"
    assert harness.load is load and harness.Result is Result
    with pytest.raises(AttributeError):
        harness.no_such_name  # noqa: B018


def test_report_dataframe_has_the_rows_export_writes() -> None:
    frame = load(NAIVE_SMEM_REPORT).to_dataframe(kernel="smem$")
    exported = CliRunner().invoke(main, ["export", str(NAIVE_SMEM_REPORT), "-k", "sgemm_smem"])
    rows = list(csv.reader(io.StringIO(exported.stdout)))
    assert list(frame.columns) == rows[0] == ["kernel_id", "kernel", "metric", "instance",
                                              "value", "unit"]
    assert len(frame) == len(rows) - 1
    duration = frame[(frame.metric == "gpu__time_duration.sum") & (frame.instance == "")]
    assert duration.unit.tolist() == ["ns"] and duration.kernel.tolist() == ["sgemm_smem"]
    exported_duration = [row for row in rows if row[2] == "gpu__time_duration.sum"]
    assert float(exported_duration[0][4]) == float(duration.value.iloc[0])


def test_report_kernels_findings_and_summary() -> None:
    result = load(NAIVE_SMEM_REPORT)
    assert result.kind == "report"
    assert [k.name for k in result.kernels] == ["sgemm_naive", "sgemm_smem"]
    findings = result.findings()
    assert list(findings.columns) == ["kernel", "page", "rule", "kind", "title", "text",
                                      "speedup_pct", "weight", "what_if"]
    naive = findings[findings.kernel == "sgemm_naive"]
    assert naive.rule.iloc[0] == "coalescing" and naive.kind.iloc[0] == "bad"
    assert set(findings.kind) <= {"good", "bad", "info"}
    summary = result.summary()
    assert summary.kernel.tolist() == ["sgemm_naive", "sgemm_smem"]
    assert summary.time_ms.round(4).tolist() == [5.511, 0.3009]  # ncu's durations
    assert "pct_of_reference" not in summary.columns  # loose reports name no reference


def test_repr_html_is_the_summary_escaped() -> None:
    shown = load(NAIVE_SMEM_REPORT)._repr_html_()
    assert shown.startswith("<h4>ncuh report: h100_sgemm_naive_smem.ncu-rep</h4>\n<table")
    assert "<td>sgemm_naive</td>" in shown and "5.511" in shown
    assert "<script" not in shown


def test_repr_html_says_n_a_where_a_value_is_missing_never_none() -> None:
    shown = load(ROOT / "reports" / "runs" / "sgemm-h200-256")._repr_html_()
    assert "None" not in shown
    assert shown.count("<td>n/a</td>") == 2  # no reference in that run: no % of it


def test_repr_html_of_many_bench_results_stays_short(tmp_path: Path) -> None:
    import json

    from harness.api.result import HTML_ROWS

    bench = json.loads((ROOT / "tests" / "fixtures" / "h200_bench_small.json").read_text())
    bench["results"] = [{**result, "size": [size, size, size]}
                        for size in range(1, 41) for result in bench["results"]]  # 600 rows
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    result = load(tmp_path / "bench.json")
    assert len(result.to_dataframe()) == 600
    shown = result._repr_html_()
    assert shown.count("<tr>") == HTML_ROWS + 1  # the rows shown and the "..." row
    assert len(shown) < 16_000 and "None" not in shown and "q1_ms" not in shown


def test_page_text_and_written_pages(tmp_path: Path) -> None:
    result = load(NAIVE_SMEM_REPORT)
    text = result.page()
    assert text.startswith("# Kernels\n") and "| sgemm_naive | 5.5110 (ncu) |" in text
    index = result.page(tmp_path / "pages", fmt="md")
    assert index == tmp_path / "pages" / "index.md"
    assert index.read_text().startswith("# Kernels\n")
    assert (tmp_path / "pages" / "plots" / "gflops.png").is_file()
    with pytest.raises(ValueError, match="needs out="):
        result.page(fmt="both")


def test_run_directory_labels_every_row() -> None:
    result = load(REDUCTION_RUN)
    assert result.kind == "run"
    frame = result.to_dataframe(kernel="warp")
    assert frame.columns[0] == "label"
    assert sorted(frame.label.unique()) == ["unroll_last_warp_67108864",
                                            "warp_shuffle_67108864"]
    assert len(result.kernels) == 10
    assert result.summary().page.iloc[0].startswith("Iteration 0: ")


def test_bench_results_table() -> None:
    result = load(REDUCTION_RUN / "bench.json")
    assert result.kind == "bench" and result.kernels == []
    frame = result.to_dataframe()
    first = frame.iloc[0]
    assert (first["variant"], first["size"], first["status"]) == ("interleaved_divergent",
                                                                  "1024", "ok")
    assert first["median_ms"] == pytest.approx(0.008992)
    assert "speedup_vs_cub" in frame.columns
    assert result.findings().empty
    with pytest.raises(ReportError, match="bench results alone have no profiled kernel"):
        result.page()


def test_missing_source_is_a_report_error(tmp_path: Path) -> None:
    for missing in ("nothing", "nothing.ncu-rep", "bench.json"):  # at once, whatever the name
        with pytest.raises(ReportError, match="no such report, run directory or bench results"):
            load(tmp_path / missing)
    with pytest.raises(ReportError, match="not a report, run directory or bench results"):
        load(tmp_path)  # a folder with none of them
    text = tmp_path / "notes.ncu-rep"
    text.write_text("not a report\n")
    result = load(text)  # nothing read yet: the file's header when its kernels are asked for
    with pytest.raises(ReportError, match="not an Nsight Compute report"):
        _ = result.kernels


def _pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    """pytest run in `folder` as a project's own tests run: this checkout's harness, the
    fixture found through the installed entry point, no ncuh project named by the caller."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(folder)], capture_output=True, text=True, cwd=folder,
                          check=False, env={**_env(), "NCUH_PROJECT": ""})


def _gpu_reason() -> str:
    from harness.gpu.env import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is here: the fixture runs (tests/test_softmax_gpu.py)")
    return reason


@pytest.mark.parametrize("conftest", [None, 'pytest_plugins = ["harness.api.pytest_plugin"]\n'])
def test_ncuh_bench_skips_without_a_gpu_with_a_conftest_or_none(
        tmp_path: Path, conftest: str | None) -> None:
    """The fixture comes from ncuh's `pytest11` entry point: a folder with no conftest has it,
    and an older conftest that loads the plugin by name still works beside it."""
    reason = _gpu_reason()
    shutil.copytree(ROOT / "tests" / "projects" / "scale", tmp_path / "scale")
    if conftest is not None:
        (tmp_path / "scale" / "conftest.py").write_text(conftest)
    (tmp_path / "scale" / "test_speed.py").write_text(
        "def test_fast(ncuh_bench):\n    assert ncuh_bench('nvrtc', '1024').vs_reference > 0\n")
    done = _pytest(tmp_path / "scale")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert f"ncuh_bench needs a GPU: {reason}" in done.stdout


def test_ncuh_bench_names_why_the_project_does_not_load_gpu_or_not(tmp_path: Path,
                                                                   golden) -> None:
    folder = tmp_path / "scale"
    shutil.copytree(ROOT / "tests" / "projects" / "scale", folder)
    module = folder / "scale_project.py"
    text = module.read_text()
    module.write_text(text + "\nimport no_such_module\n")
    line = len(text.splitlines()) + 2
    (folder / "test_speed.py").write_text(
        "def test_fast(ncuh_bench):\n    assert ncuh_bench('nvrtc', '1024').vs_reference > 0\n")
    done = _pytest(folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout
    (said,) = [text for text in done.stdout.splitlines() if text.startswith("ncuh_bench: ")]
    assert said.endswith(f"'no_such_module' (scale_project.py line {line})")
    golden("ncuh_bench_project_does_not_load",
           said.replace(str(folder), "PROJECT").replace(f"line {line}", "line N") + "\n")
    assert "Traceback" not in done.stdout and "another exception" not in done.stdout


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(ROOT)}
