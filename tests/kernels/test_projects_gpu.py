"""Projects end to end on a GPU: the `ncuh init` project (bench, profile, writeup, its own
pytest file) as a user runs it, and the test project's two kinds of launcher.

Run with `pytest -m gpu` on a machine with a CUDA GPU and CuPy (profile also needs ncu).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.gpu.bench import BenchRun
from harness.util.ncu_locate import ncu_executable

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
SCALE = Path(__file__).resolve().parents[1] / "projects" / "scale"


def checkout_environment() -> dict[str, str]:
    """This checkout first on PYTHONPATH, keeping what the machine already had there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
    env.pop("NCUH_PROJECT", None)
    return env


def ncuh(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """`ncuh ARGS` in a fresh process from `cwd`, as a user types it."""
    env = checkout_environment()
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def init_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("user")
    done = ncuh("init", "mine", cwd=home)
    assert done.returncode == 0, done.stderr
    return home / "mine"


def test_init_project_benches_against_its_reference_and_limit(init_project: Path) -> None:
    done = ncuh("bench", "--all", "--sizes", "2^20,2^24", "--repeats", "10", "--out", "bench",
                cwd=init_project)
    assert done.returncode == 0, done.stdout + done.stderr
    run = BenchRun.load(init_project / "bench" / "bench.json")
    assert run.project["name"] == "saxpy" and run.project["reference"] == "cupy"
    assert run.variants == ["naive", "vectorized", "cupy", "device_copy"]
    for result in run.results:
        assert result.status == "ok", (result.variant, result.error)
        assert result.gbps and result.gbps > 0
    for result in (r for r in run.results if r.kind != "limit"):
        assert result.rel_error is not None and result.rel_error < 1e-6
        assert result.gflops == pytest.approx(2 * result.size[0] / result.median_ms / 1e6)
    vectorized = run.result("vectorized", (2**24,))
    assert vectorized.speedup["cupy"] is not None and vectorized.speedup["previous"] is not None
    assert vectorized.tuning == "defaults"  # no winners shipped with a new project
    assert "vs CuPy" in done.stdout and "device_copy" in done.stdout and "GB/s" in done.stdout


def test_init_project_profiles_and_writes_iteration_pages(init_project: Path) -> None:
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    done = ncuh("profile", "--all", "--size", "2^22", "--set", "basic", "--bench",
                "--out", "runs", cwd=init_project)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = init_project / done.stdout.strip().splitlines()[-1]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["project"]["name"] == "saxpy"
    assert [e["label"] for e in manifest["entries"]] == ["naive_4194304", "vectorized_4194304"]
    assert [e["kernel_name"] for e in manifest["entries"]] == ["saxpy_naive", "saxpy_vec4"]
    done = ncuh("writeup", str(run_dir), "--out", "pages", "--format", "md", cwd=init_project)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = sorted((init_project / "pages").glob("0*.md"))
    assert [p.name for p in pages] == ["00_naive_4194304.md", "01_vectorized_4194304.md"]
    second = pages[1].read_text()
    assert second.startswith("# Iteration 1: Grid-Stride float4")
    assert "Last time, every thread moved 4 bytes" in second  # Strategy from notes/*.md
    assert "CuPy: " in second and "First: " in second  # speedup factors
    assert "(One Element per Thread)" in second
    index = (init_project / "pages" / "index.md").read_text()
    assert "% of CuPy" in index


def test_init_projects_own_tests_pass(init_project: Path) -> None:
    env = checkout_environment()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_saxpy.py"], cwd=init_project, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "11 passed" in done.stdout


def test_a_python_launcher_and_an_nvrtc_variant_bench_side_by_side(tmp_path: Path) -> None:
    done = ncuh("bench", "--project", str(SCALE), "--all", "--repeats", "5", "--out",
                str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = BenchRun.load(tmp_path / "bench.json")
    assert run.variants == ["nvrtc", "rawkernel", "cupy_multiply", "device_copy"]
    assert all(r.status == "ok" for r in run.results), [r.error for r in run.results]
    assert [r.kind for r in run.results[-4:]] == ["reference"] * 2 + ["limit"] * 2


def test_a_wrong_kernel_is_caught_and_never_timed(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(SCALE, tmp_path / "p")
    module = tmp_path / "p" / "scale_project.py"
    module.write_text(module.read_text().replace('return {"UNROLL": 1}', 'return {"UNROLL": 2}'))
    done = ncuh("bench", "--project", str(tmp_path / "p"), "--variant", "nvrtc", "--sizes",
                "1000", "--repeats", "3", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    result = BenchRun.load(tmp_path / "out" / "bench.json").result("nvrtc", (1000,))
    assert result.status == "failed" and result.samples_ms == []
    assert result.error.startswith("wrong result: max abs error")


TRANSPOSE = Path(__file__).resolve().parents[1] / "projects" / "transpose"


def test_the_transpose_chain_is_exact_and_checks_clean_beside_a_real_cupy(tmp_path: Path) -> None:
    """compare = "exact" on a real GPU: every variant, the reference and the limit run, and no
    element differs; `ncuh check` (its dry run standing in for the CuPy installed here) passes
    too."""
    done = ncuh("bench", "--project", str(TRANSPOSE), "--all", "--repeats", "5", "--out",
                str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = BenchRun.load(tmp_path / "bench.json")
    assert run.variants == ["naive", "tiled", "padded", "swizzled", "cupy", "device_copy"]
    assert all(r.status == "ok" for r in run.results), [r.error for r in run.results]
    assert {r.rel_error for r in run.results if r.kind != "limit"} == {0.0}
    checked = ncuh("check", "--project", str(TRANSPOSE), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "4 of 4 variant(s)" in checked.stdout and checked.stderr == ""


def test_an_exact_comparison_refuses_one_element_one_ulp_off(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(TRANSPOSE, tmp_path / "p")
    source = tmp_path / "p" / "transpose.cu"
    text = source.read_text()
    wrong = "x[(size_t)row * cols + col] * (row == 5 && col == 7 ? 1.0000001f : 1.0f)"
    source.write_text(text.replace("x[(size_t)row * cols + col];", f"{wrong};", 1))
    done = ncuh("bench", "--project", str(tmp_path / "p"), "--variant", "naive", "--sizes",
                "1000x600", "--repeats", "3", "--no-references", "--out", str(tmp_path / "out"),
                cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    result = BenchRun.load(tmp_path / "out" / "bench.json").result("naive", (1000, 600))
    assert result.status == "failed" and result.samples_ms == []
    assert result.error == "wrong result: 1 element(s) of out differ from the truth (compared " \
                           "exactly)"
