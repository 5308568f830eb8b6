"""The writeup's plots drawn beside its reading (`harness.pages.plot_drawer`): the same pages,
and no drawer left behind."""

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
    reason="a drawer is started only with a second core")

_WRITE = """
import os, signal, sys
from pathlib import Path
from harness.pages.plot_drawer import PlotDrawer
mode, out = sys.argv[1], Path(sys.argv[2])
drawer = PlotDrawer.start() if mode != "here" else None
assert (drawer is None) == (mode == "here")
if mode == "killed":  # a drawer gone before it answers: the plots are drawn here
    os.kill(drawer._pid, signal.SIGKILL)
from harness.pages import collect, write
write(collect([Path(sys.argv[3])]), out, "md", drawer)
try:
    os.waitpid(-1, os.WNOHANG)
    print("a child is left")
except ChildProcessError:
    print("no child left")
"""


def _written(mode: str, out: Path) -> dict[str, bytes]:
    scratch = out.with_name(f"{out.name}-tmp")  # where the drawer's children write
    scratch.mkdir()
    # nothing kept: every plot is drawn, by the drawer or here
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCUH_REPORT_CACHE": "off",
           "TMPDIR": str(scratch)}
    said = subprocess.run([sys.executable, "-c", _WRITE, mode, str(out), str(RUN)], env=env,
                          capture_output=True, check=True, text=True).stdout
    assert said.strip() == "no child left"
    assert list(scratch.iterdir()) == []  # its scratch folder went with it
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def drawn_here(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The pages with every plot drawn by the command itself (no drawer)."""
    return _written("here", tmp_path_factory.mktemp("pages") / "here")


def test_pages_drawn_beside_are_the_pages_drawn_here(tmp_path: Path,
                                                     drawn_here: dict[str, bytes]) -> None:
    assert _written("drawer", tmp_path / "beside") == drawn_here
    plots = [name for name in drawn_here if name.startswith("plots/")]
    assert len(plots) == 6 and all(drawn_here[name].startswith(b"\x89PNG") for name in plots)


def test_a_drawer_gone_before_it_answers_leaves_the_plots_to_the_command(
        tmp_path: Path, drawn_here: dict[str, bytes]) -> None:
    assert _written("killed", tmp_path / "killed") == drawn_here
