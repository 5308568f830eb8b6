"""`ncuh profile` end to end on a GPU: two variants, real ncu, reports read back.

Run with `pytest -m gpu` on a machine with a CUDA GPU, CuPy and Nsight Compute.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.rundir.manifest import load_run
from harness.util.ncu_locate import ncu_executable

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent


def _metric(frame, name: str) -> float:
    rows = frame[(frame["metric"] == name) & (frame["instance"] == "")]
    assert len(rows) == 1, name
    return float(rows["value"].iloc[0])


@pytest.fixture(scope="module")
def profiled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    out = tmp_path_factory.mktemp("runs")
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "profile", "--variant", "naive",
         "--variant", "register_tiled", "--size", "256", "--set", "basic", "--metrics-csv",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    run_dir = Path(completed.stdout.strip().splitlines()[-1])
    if not run_dir.is_absolute():
        run_dir = ROOT / run_dir
    assert run_dir.parent == out
    return run_dir


def test_run_directory_and_manifest(profiled_run: Path) -> None:
    run = load_run(profiled_run)
    manifest = run.manifest
    env = manifest["environment"]
    assert env["compute_capability"] and env["gpu"]
    # The runner's CuPy fields joined with the probe's (driver from NVML or nvidia-smi).
    assert env["cuda_runtime"] and env["sm_count"] and env["pci_bus_id"] and env["driver"]
    assert env["ncu_version"] and env["ncu_version"][0].isdigit()
    assert manifest["ncu"]["set"] == "basic" and manifest["ncu"]["clock_control"] == "base"
    assert manifest["ncu"]["capture"] == "nvtx"
    assert [e.label for e in run.entries] == ["naive_256", "register_tiled_256"]
    assert all(e.ok for e in run.entries)
    for raw in manifest["entries"]:
        assert raw["rel_error"] is not None and raw["rel_error"] < 1e-4
    assert (profiled_run / "metrics.csv").stat().st_size > 0
    assert not list(profiled_run.parent.glob(".*incomplete"))


def _metrics(run_dir: Path):
    import pandas as pd

    return pd.read_csv(run_dir / "metrics.csv", keep_default_na=False)


def test_each_report_holds_exactly_the_target_launch(profiled_run: Path) -> None:
    from harness.project import load_project
    from harness.project.locate import default_project_path

    sgemm = load_project(default_project_path())
    import sgemm_project

    table = _metrics(profiled_run)
    run = load_run(profiled_run)
    for entry in run.entries:
        mine = table[table["label"] == entry.label]
        assert set(mine["kernel"]) == {f"sgemm_{entry.variant}"}
        assert set(mine["kernel_id"]) == {0}
        size = sgemm.parse_size("256")
        # the geometry of the parameters the runner reported (defaults, or tuning winners)
        launch = sgemm.variant(entry.variant).launch(size, entry.params,
                                                     sgemm_project.make_inputs(size, 1))
        assert _metric(mine, "launch__grid_size") == math.prod(launch.grid)
        assert _metric(mine, "launch__block_size") == math.prod(launch.block)
        assert _metric(mine, "gpu__time_duration.sum") > 0


def _export(report: Path) -> str:
    # The report reader in a fresh process, as `ncuh export` runs it for a user.
    completed = subprocess.run([sys.executable, "-m", "harness", "export", str(report)],
                               capture_output=True, text=True, timeout=300, cwd=ROOT,
                               check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_metrics_csv_matches_the_report_reader(profiled_run: Path) -> None:
    import io

    import pandas as pd

    table = _metrics(profiled_run)
    for entry in load_run(profiled_run).entries:
        exported = pd.read_csv(io.StringIO(_export(entry.report)), keep_default_na=False)
        mine = table[table["label"] == entry.label]
        assert len(mine) == len(exported)
        assert _metric(mine, "gpu__time_duration.sum") == pytest.approx(
            _metric(exported, "gpu__time_duration.sum"))


def test_the_manifest_command_line_reproduces_the_report(
    profiled_run: Path, tmp_path: Path
) -> None:
    manifest = json.loads((profiled_run / "manifest.json").read_text())
    argv = list(manifest["ncu"]["command_lines"][0])
    argv[argv.index("-o") + 1] = str(tmp_path / "again.ncu-rep")
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT,
                               check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    kernels = {line.split(",")[1] for line in _export(tmp_path / "again.ncu-rep").splitlines()[1:]}
    assert kernels == {"sgemm_naive"}


def test_a_user_program_gets_the_same_run_directory(tmp_path: Path) -> None:
    """`ncuh profile -k ... -- python program.py`: a program ncuh did not write, no runner."""
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "profile", "--set", "basic", "-k", "regex:^sgemm_",
         "--launch-skip", "1", "--launch-count", "1", "--metrics-csv", "--out", str(tmp_path),
         "--",
         sys.executable, "benchmarks/launch_variants.py", "--variants", "naive,smem_tiled",
         "--size", "256"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    run = load_run(Path(completed.stdout.strip().splitlines()[-1]))
    (entry,) = run.entries
    assert entry.ok and entry.label == "program"
    # Without a runner the probe alone describes the machine: nvidia-smi/NVML and libcuda.
    env = run.environment
    assert env["gpu"] and env["compute_capability"] and env["driver"] and env["cuda"]
    assert env["cupy"] is None
    table = _metrics(run.path)
    # Launch skip 1 of the two matching kernels: the report holds smem_tiled alone.
    assert set(table["kernel"]) == {"sgemm_smem_tiled"}


def test_ncu_saves_only_what_the_profiled_launch_can_use(tmp_path: Path) -> None:
    """The runner empties CuPy's cache of freed blocks before the profiled launch, so ncu's
    save and restore around each replay pass covers the live buffers, not what the check
    left behind (H100 reports at 1024: 135 MB saved by a runner that kept them, 101 MB by
    this one: the inputs, and the ~90 MB CUDA's libraries hold outside CuPy's cache)."""
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "profile", "--variant", "register_tiled", "--size",
         "1024", "--set", "basic", "--no-metrics-csv", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    (entry,) = load_run(Path(completed.stdout.strip().splitlines()[-1])).entries
    lines = _export(entry.report).splitlines()
    saved = [line for line in lines if ",profiler__replayer_bytes_mem_backed_up.max,," in line]
    assert len(saved) == 1, lines[:3]
    inputs = 3 * 1024 * 1024 * 4  # A, B and C of float32
    assert inputs <= float(saved[0].split(",")[4]) < 118e6
