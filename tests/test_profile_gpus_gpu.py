"""`ncuh profile --gpus all` on a real host with two GPUs or more (`pytest -m gpu`; skipped
with fewer): each entry pinned to its GPU, both GPUs used, the reports real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.profile.gpus import list_gpus
from harness.rundir.manifest import load_run
from harness.util.ncu_locate import ncu_executable

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent


def test_gpus_all_profiles_on_every_gpu(tmp_path: Path) -> None:
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    gpus = list_gpus()
    if len(gpus) < 2:
        pytest.skip(f"gpu test: needs two GPUs, nvidia-smi lists {len(gpus)}")
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "profile", "--variant", "naive", "--variant",
         "register_tiled", "--size", "256", "--size", "512", "--gpus", "all",
         "--allow-mismatch", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    run = load_run(Path(completed.stdout.strip().splitlines()[-1]))
    assert all(entry.ok for entry in run.entries)
    by_uuid = {gpu.uuid: gpu for gpu in gpus}
    used = set()
    for raw in run.manifest["entries"]:
        gpu = by_uuid[raw["gpu"]["uuid"]]
        used.add(gpu.uuid)
        assert raw["gpu"]["name"] == gpu.name and raw["passes"] > 0
    assert len(used) >= 2  # four targets, a queue per GPU: more than one GPU took work
