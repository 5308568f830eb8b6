"""The writeup's plots drawn by forked workers beside its reading (`harness.pages.plot_workers`):
the same pages as drawn by the command itself, also when a worker dies, and no worker left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "reports" / "runs" / "sgemm-h200-256"

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="plot workers are started only with a second core")

_WRITE = """
import multiprocessing, os, signal, sys
from pathlib import Path
from harness.pages import collect, plot_workers, write
mode, out, run = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
with plot_workers() as workers:
    assert workers is not None
    if mode == "killed":  # workers gone before they draw: the command draws the plots
        for worker in multiprocessing.active_children():
            os.kill(worker.pid, signal.SIGKILL)
    write(collect([run]), out, "md", None if mode == "here" else workers)
print("workers left:", len(multiprocessing.active_children()))
"""


def _written(mode: str, out: Path) -> dict[str, bytes]:
    # nothing kept: every plot is drawn, by a worker or here
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCUH_REPORT_AND_PLOT_CACHE": "off"}
    env.pop("NCUH_JOBS", None)  # every core: plot workers
    said = subprocess.run([sys.executable, "-c", _WRITE, mode, str(out), str(RUN)], env=env,
                          capture_output=True, check=True, text=True).stdout
    assert said.strip() == "workers left: 0"
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def drawn_here(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The pages with every plot drawn by the command itself."""
    return _written("here", tmp_path_factory.mktemp("pages") / "here")


def test_pages_drawn_by_workers_are_the_pages_drawn_here(tmp_path: Path,
                                                         drawn_here: dict[str, bytes]) -> None:
    assert _written("workers", tmp_path / "workers") == drawn_here
    plots = [name for name in drawn_here if name.startswith("plots/")]
    assert len(plots) == 6 and all(drawn_here[name].startswith(b"\x89PNG") for name in plots)


def test_workers_that_died_leave_the_plots_to_the_command(
        tmp_path: Path, drawn_here: dict[str, bytes]) -> None:
    assert _written("killed", tmp_path / "killed") == drawn_here
