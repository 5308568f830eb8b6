"""The softmax project (three kernels in one .cu, a CuPy RawKernel, a CuPy reference, a
device-copy limit) on a GPU, unchanged since `ncuh check` passed it: bench, profile, pages.

Run with `pytest -m gpu` on a machine with a CUDA GPU and CuPy (profile also needs ncu).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.gpu.bench import BenchRun
from harness.util.ncu_locate import ncu_executable

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
SOFTMAX = Path(__file__).parent / "projects" / "softmax"


def checkout_environment() -> dict[str, str]:
    """This checkout first on PYTHONPATH, keeping what the machine already had there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
    env.pop("NCUH_PROJECT", None)
    return env


def ncuh(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd,
                          env=checkout_environment(), capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user") / "softmax"
    shutil.copytree(SOFTMAX, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_softmax_benches_every_variant_against_cupy(project: Path) -> None:
    done = ncuh("bench", "--all", "--sizes", "4096x1024,1000x333", "--repeats", "10",
                "--out", "bench", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    run = BenchRun.load(project / "bench" / "bench.json")
    assert run.variants == ["naive", "warp", "online", "rawkernel", "cupy", "device_copy"]
    for result in run.results:
        assert result.status == "ok", (result.variant, result.error)
    for result in (r for r in run.results if r.kind != "limit"):
        assert result.rel_error is not None and result.rel_error < 1e-5


def test_softmax_profiles_and_writes_pages(project: Path) -> None:
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    done = ncuh("profile", "--all", "--size", "4096x1024", "--set", "basic", "--out", "runs",
                cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = project / done.stdout.strip().splitlines()[-1]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [e["label"] for e in manifest["entries"]] == [
        "naive_4096x1024", "warp_4096x1024", "online_4096x1024", "rawkernel_4096x1024"]
    assert [e["kernel_name"] for e in manifest["entries"]][:3] == [
        "softmax_naive", "softmax_warp", "softmax_online"]
    done = ncuh("writeup", str(run_dir), "--out", "pages", "--format", "md", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "pages" / "index.md").is_file()


def test_softmax_from_python(project: Path, tmp_path: Path) -> None:
    import harness
    from harness.api import profile

    timed = harness.bench(["warp", "online"], ["2048x512"], project=project, repeats=5,
                          out=tmp_path / "bench")
    frame = timed.to_dataframe()
    rows = frame[frame.variant.isin(["warp", "online"])]
    assert rows.status.tolist() == ["ok", "ok"] and (rows.median_ms > 0).all()
    assert "speedup_vs_cupy" in frame.columns
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    run = profile(["online"], ["2048x512"], project=project, section_set="basic",
                  out=tmp_path / "runs")
    assert [k.name for k in run.kernels] == ["softmax_online"]
    assert run.to_dataframe().label.unique().tolist() == ["online_2048x512"]
    assert run.page(tmp_path / "pages").name == "index.md"
