"""`ncuh writeup` on a run directory (manifest + reports + bench.json), and its bad inputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.cli import main
from harness.pages.writeup import collect
from harness.profile.processes import package_environment
from harness.project import load_project
from harness.project.locate import default_project_path

REPO = Path(__file__).resolve().parent.parent

REPORT = NAIVE_SMEM_REPORT
SIZE = [1024, 1024, 1024]


def _result(variant: str, median_ms: float, speedup: dict) -> dict:
    gflops = 2 * 1024**3 / (median_ms * 1e6)
    return {"variant": variant, "size": SIZE, "params": {}, "samples_ms": [median_ms] * 3,
            "median_ms": median_ms, "q1_ms": median_ms * 0.99, "q3_ms": median_ms * 1.01,
            "min_ms": median_ms * 0.98, "gflops": gflops, "rel_error": 1e-7,
            "speedup": speedup, "status": "ok", "error": None}


def recorded(project_file: Path, sizes: list[list[int]]) -> dict:
    """The manifest's `project` block as `ncuh profile` writes it for `project_file`."""
    project = load_project(project_file)
    return project.manifest([project.size(size) for size in sizes])


def make_run(root: Path) -> Path:
    """A run directory per harness.rundir: naive (the fixture's sgemm_naive), coalesced (a
    report with two kernels, neither its own), a failed entry, and bench.json; profiled from
    the bundled SGEMM project, which its manifest records."""
    run = root / "runs" / "20260101-000000"
    run.mkdir(parents=True)
    entries = []
    for label, variant in (("naive_1024", "naive"), ("coalesced_1024", "coalesced")):
        shutil.copyfile(REPORT, run / f"{label}.ncu-rep")
        entries.append({"label": label, "variant": variant, "size": SIZE, "params": {},
                        "report": f"{label}.ncu-rep", "status": "ok", "error": None})
    entries.append({"label": "vectorized_1024", "variant": "vectorized", "size": SIZE,
                    "params": {}, "report": None, "status": "failed",
                    "error": "compile error"})
    manifest = {
        "schema": "ncuh.run/1", "ncuh_version": "0.1.0", "git_commit": None,
        "environment": {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                        "driver": "580.159.04", "ncu_version": "2025.3.1"},
        "ncu": {"set": "full", "clock_control": "base", "cache_control": "all",
                "replay_mode": "kernel", "command_lines": []},
        "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:00Z",
        "entries": entries,
        "project": recorded(default_project_path(), [SIZE]),
    }
    for variant in manifest["project"]["chain"]:  # coalesced's kernel is not named: it may
        if variant["name"] == "coalesced":       # be any of its report's
            variant["kernel_name"] = None
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    bench = {
        "schema": "ncuh.bench/1", "ncuh_version": "0.1.0", "created_at": "2026-01-01T00:00:00Z",
        "environment": {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"},
        "settings": {"repeats": 50, "warmup": 5, "l2_flush": True, "alpha": 1.0, "beta": 0.0},
        "results": [
            _result("naive", 5.0, {"cublas": 0.05, "naive": 1.0, "previous": None}),
            _result("coalesced", 1.0, {"cublas": 0.25, "naive": 5.0, "previous": 5.0}),
            _result("cublas", 0.25, {"cublas": 1.0, "naive": 20.0, "previous": None}),
        ],
    }
    (run / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    return run


def test_collect_run_directory_pages(tmp_path: Path):
    writeup = collect([make_run(tmp_path)])
    headings = [p.heading for p in writeup.pages]
    assert headings == ["Iteration 0: Naive",
                        "Iteration 1: Global Memory Coalescing (sgemm_naive)",
                        "Iteration 1: Global Memory Coalescing (sgemm_smem)"]
    naive, coalesced_a, coalesced_b = writeup.pages
    assert naive.kernel_name == "sgemm_naive"  # the variant's own kernel, not sgemm_smem
    assert naive.strategy and "### " not in naive.strategy[:3]
    assert naive.time_source == "bench" and naive.time_ms == 5.0
    assert naive.pct_of_reference == pytest.approx(5.0)
    assert naive.speedups is not None and naive.speedups.reference == 0.05
    assert [r.size for r in naive.bench_rows] == ["1024x1024x1024"]
    # the previous iteration's page at the same size feeds the progress rule
    assert coalesced_b.previous_slug == naive.slug
    assert any(f.rule == "progress" for f in coalesced_b.good + coalesced_b.bad)
    assert coalesced_a.speedups is not None and coalesced_a.speedups.previous == 5.0
    assert writeup.reference_gflops == pytest.approx(2 * 1024**3 / 0.25e6)
    assert writeup.index_size == "1024x1024x1024"


def test_cli_writes_chain_pages(tmp_path: Path, golden):
    run = make_run(tmp_path)
    # In a fresh process, as a user runs it: ncu_report gives one derived metric of the details
    # table the unit of whichever report this process read first (tests/fixtures/README.md).
    result = subprocess.run([sys.executable, "-m", "harness", "writeup", f"runs/{run.name}",
                             "--out", "reports/chain"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, env=package_environment())
    assert result.returncode == 0, result.stderr
    out = tmp_path / "reports" / "chain"
    # the index: each iteration's row (5.0000 ms, 5.0% of cuBLAS from bench.json), the times'
    # source; the naive page: its strategy, bench rows and speedups (cuBLAS 0.0500x, Prev n/a)
    golden("chain_index", (out / "index.md").read_text(encoding="utf-8"))
    golden("chain_naive_page", (out / "00_naive_1024x1024x1024.md").read_text(encoding="utf-8"))
    html = (out / "index.html").read_text(encoding="utf-8")
    # and the instruction mix, and the binding unit's throughput
    assert html.count('src="data:image/png;base64,') == 6
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temporary files
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        "bound_unit.png", "gflops.png", "instruction_mix.png", "occupancy.png", "roofline.png",
        "stalls.png"]


def test_format_md_only(tmp_path: Path):
    result = CliRunner().invoke(main, ["writeup", str(REPORT), "--out", str(tmp_path / "o"),
                                       "--format", "md"])
    assert result.exit_code == 0, result.output
    assert not list((tmp_path / "o").glob("*.html"))
    assert len(list((tmp_path / "o").glob("*.md"))) == 3


@pytest.mark.parametrize("make", ["missing", "empty_dir", "incomplete", "garbage", "no_source"])
def test_bad_sources_exit_2_with_one_line(tmp_path: Path, make: str):
    args = {
        "missing": [str(tmp_path / "nope")],
        "empty_dir": [str(tmp_path)],
        "incomplete": [str(tmp_path / "x.incomplete")],
        "garbage": [str(tmp_path / "bad.ncu-rep")],
        "no_source": [],
    }[make]
    (tmp_path / "x.incomplete").mkdir()
    (tmp_path / "bad.ncu-rep").write_bytes(b"this is not a report")
    result = CliRunner().invoke(main, ["writeup", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) <= 3 and "Traceback" not in result.output  # click usage for no_source
    if make != "no_source":
        assert len(lines) == 1 and lines[0].startswith("ncuh: error: ")
    assert not (tmp_path / "out").exists()


def test_bench_results_from_a_separate_bench_directory_serve_a_run_without_bench(
    tmp_path: Path,
):
    run = make_run(tmp_path)
    bench_dir = tmp_path / "runs" / "bench-20260101"
    bench_dir.mkdir()
    (run / "bench.json").rename(bench_dir / "bench.json")
    alone = collect([run])
    assert alone.pages[0].time_source == "ncu" and alone.pages[0].speedups is None
    joined = collect([run, bench_dir])
    naive = joined.pages[0]
    assert naive.time_source == "bench" and naive.time_ms == 5.0
    assert naive.speedups is not None and naive.speedups.reference == 0.05
    assert joined.reference_gflops == pytest.approx(2 * 1024**3 / 0.25e6)
    # the bench.json file itself works as well
    assert collect([bench_dir / "bench.json", run]).pages[0].time_ms == 5.0


def test_a_json_that_is_not_bench_results_is_refused(tmp_path: Path):
    run = make_run(tmp_path)
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something/1"}', encoding="utf-8")
    result = CliRunner().invoke(main, ["writeup", str(run), str(other), "--out",
                                       str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "not ncuh bench results" in result.output


SCALE = Path(__file__).parent / "projects" / "scale" / "ncuh.toml"


def _with_project(run: Path, project: dict, variant: str = "nvrtc") -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["project"] = project
    manifest["entries"] = [dict(manifest["entries"][0], variant=variant)]
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "bench.json").unlink(missing_ok=True)


def test_strategies_and_names_come_from_the_manifest_not_the_project_it_names(
    tmp_path: Path, golden,
):
    run = make_run(tmp_path)
    # the path is a trap: a project that is not there; the record alone writes the pages
    record = recorded(SCALE, [[1024]])
    for variant in record["chain"]:  # the SGEMM report stands in for the kernel it names
        variant["kernel_name"] = None
    _with_project(run, {**record, "path": str(tmp_path / "gone.toml")})
    writeup = collect([run])
    (strategy,) = {page.strategy for page in writeup.pages}
    golden("nvrtc_strategy", strategy)
    assert writeup.pages[0].heading.startswith("Iteration 0: NVRTC Source")
    assert writeup.reference_name == "CuPy multiply"


def test_an_older_manifest_names_its_project_but_only_project_loads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], golden,
):
    run = make_run(tmp_path)
    _with_project(run, {"name": "scale-test", "path": str(SCALE.resolve())})
    writeup = collect([run])
    assert all(page.strategy is None for page in writeup.pages)
    assert writeup.pages[0].heading == "nvrtc (sgemm_naive)"
    assert "pass --project to show them" in capsys.readouterr().err
    loaded = collect([run], SCALE)
    (strategy,) = {page.strategy for page in loaded.pages}
    golden("nvrtc_strategy", strategy)


def test_a_run_of_another_project_gets_no_strategies_from_the_one_named(tmp_path: Path):
    run = make_run(tmp_path)
    # the bundled project also has a variant called naive: its Strategy would be the wrong one
    _with_project(run, {"name": "saxpy", "path": "/elsewhere/ncuh.toml"}, variant="naive")
    writeup = collect([run], default_project_path())
    assert all(page.strategy is None for page in writeup.pages)
    assert [page.heading for page in writeup.pages] == ["naive (sgemm_naive)",
                                                        "naive (sgemm_smem)"]
    # the same run naming the bundled project by name gets its pages from it
    _with_project(run, {"name": "sgemm", "path": "/elsewhere/ncuh.toml"}, variant="naive")
    assert collect([run], default_project_path()).pages[0].heading == "Iteration 0: Naive"
    assert collect([run]).pages[0].heading == "naive (sgemm_naive)"  # no --project: no chain


def test_bench_rows_show_gb_per_second_when_the_project_has_a_bytes_model(tmp_path: Path):
    from harness.pages.render import render_page

    run = make_run(tmp_path)
    bench = json.loads((run / "bench.json").read_text())
    bench["results"][0]["gbps"] = 12.5
    (run / "bench.json").write_text(json.dumps(bench))
    writeup = collect([run])
    page = writeup.pages[0]
    assert page.bench_rows[0].gbps == 12.5
    assert "1024x1024x1024: 5.000000 ms (429.5 GFLOP/s, 12.5 GB/s)" in render_page(
        page, writeup, "md")
    assert "<td class=\"n\">12.5</td>" in render_page(page, writeup, "html")


@pytest.mark.parametrize(("project", "judged_by_bytes"), [
    ("kernels/sgemm", False),  # counts FLOPs and bytes, no bandwidth limit: a GEMM
    ("kernels/reduction", True),  # counts both, and stands beside a device copy
    ("kernels/softmax_triton", True),
])
def test_the_index_judges_a_chain_by_gflops_unless_it_stands_beside_a_bandwidth_limit(
        project: str, judged_by_bytes: bool) -> None:
    from harness.pages.writeup import Chain
    from harness.rundir.manifest import ProjectRecord

    loaded = load_project(REPO / project)
    assert Chain.from_project(loaded).counts_bytes is judged_by_bytes
    record = ProjectRecord.model_validate_json(json.dumps(recorded(REPO / project, [[1024]])))
    assert Chain.from_record(record).counts_bytes is judged_by_bytes


@pytest.mark.parametrize(("flops", "bytes_", "limits", "judged_by_bytes"), [
    (False, True, False, True),  # only bytes: GB/s
    (True, False, False, False),  # only FLOPs: GFLOP/s
    (True, True, False, False),  # both, no limit: a GEMM
    (True, True, True, True),  # both, beside a device copy
    (False, False, False, False),  # neither: nothing to show as GB/s
])
def test_the_index_metric_from_a_recorded_work_model(flops: bool, bytes_: bool, limits: bool,
                                                     judged_by_bytes: bool) -> None:
    from harness.pages.writeup import Chain
    from harness.rundir.manifest import ProjectRecord

    block = recorded(REPO / ("kernels/reduction" if limits else "kernels/sgemm"), [[1024]])
    block["work_model"] = {**block["work_model"], "flops": flops, "bytes": bytes_}
    record = ProjectRecord.model_validate_json(json.dumps(block))
    assert Chain.from_record(record).counts_bytes is judged_by_bytes
