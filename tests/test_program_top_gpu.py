"""`ncuh profile --top N -- PROGRAM` on a GPU, on a small transformer's training step
(`examples/transformer_step.py`): an NVTX step after the warm-up, eager, compiled, replayed
from a CUDA graph, and a two-process torchrun on a two-GPU host. Run with `pytest -m gpu`.

What each test pins: the second pass reaches the launch the first pass ranked (its report's
kernel has the ranked demangled name, grid and block), the ranking covers the NVTX step and
nothing of the warm-up, and the pages, diff and history read the run.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from harness.profile.gpus import list_gpus
from harness.report import load_kernel_reports
from harness.rundir import Run, kernel_key, load_run
from harness.util import ncu_executable

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "transformer_step.py"
# a small step: two blocks, short sequences, so that each pass of the program is quick
SMALL = ["--depth", "2", "--batch", "8", "--context", "128", "--warmup", "2"]
TOP = 3
# each run's top N: the fewer, the fewer second passes; two steps are there for their ranking
TOPS = {"eager": TOP, "two steps": 1, "compiled": 2, "graph": 2}


def _ready() -> None:
    if ncu_executable() is None:
        pytest.skip("gpu test: ncu (Nsight Compute) is not installed")
    if importlib.util.find_spec("torch") is None:
        pytest.skip("gpu test: PyTorch is not installed")
    if not PROGRAM.is_file():
        pytest.skip(f"gpu test: {PROGRAM.relative_to(ROOT)} is not in this checkout")


def _ncuh(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, check=False)


def _top(out: Path, *program: str, top: int = TOP) -> Run:
    done = _ncuh("profile", "--top", str(top), "--nvtx-include", "step/", "--out", str(out),
                 "--", *program)
    assert done.returncode == 0, done.stdout + done.stderr
    return load_run(done.stdout.strip().splitlines()[-1])


def _step(*extra: str) -> list[str]:
    return [sys.executable, str(PROGRAM), *SMALL, *extra]


class Runs:
    """The program's runs, each made the first time a test asks for it (so that `-k` leaves
    the others unmade): the top N of one step, eager, compiled and from a CUDA graph, and the
    ranking alone (top 1) of two steps."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.made: dict[str, Run] = {}

    def __getitem__(self, kind: str) -> Run:
        if kind not in self.made:
            if kind == "compiled":
                # as a user would: the compiled program once, so that both passes find its
                # compile caches warm (the second pass counts launches from the start)
                warm = subprocess.run(_step("--steps", "1", "--compile"), capture_output=True,
                                      text=True, timeout=600, cwd=ROOT, check=False)
                assert warm.returncode == 0, warm.stdout + warm.stderr
            extra = {"eager": ["--steps", "1"], "two steps": ["--steps", "2"],
                     "compiled": ["--steps", "1", "--compile"],
                     "graph": ["--steps", "1", "--cuda-graph"]}[kind]
            self.made[kind] = _top(self.out, *_step(*extra), top=TOPS[kind])
        return self.made[kind]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    _ready()
    return Runs(tmp_path_factory.mktemp("runs"))


def _assert_reports_hold_the_ranked_launches(run: Run) -> None:
    """Each entry's report holds the ranked kernel: mangled name, grid and block."""
    ranking = run.record.ranking
    assert ranking is not None and run.entries
    for entry in run.entries:
        assert entry.ok, f"{entry.label}: {entry.error}"
        ranked = ranking.process(entry.ranked.process).kernel(entry.ranked.rank)
        (profile,) = load_kernel_reports(entry.report)
        assert (profile.mangled_name, profile.launch.grid, profile.launch.block) == (
            ranked.mangled, ranked.grid, ranked.block), entry.label


@pytest.mark.parametrize("kind", ["eager", "compiled", "graph"])
def test_the_second_pass_profiles_the_ranked_launch(runs: Runs, kind: str) -> None:
    run = runs[kind]
    _assert_reports_hold_the_ranked_launches(run)
    (process,) = run.record.ranking.processes
    assert len(run.entries) == min(TOPS[kind], len(process.kernels))
    # shares add up, and the top N's cumulative share is the Nth's
    assert sum(k.share_pct for k in process.kernels) == pytest.approx(100.0, abs=0.01)
    assert process.total_ns == pytest.approx(sum(sum(k.durations_ns) for k in process.kernels))


def test_the_nvtx_step_is_ranked_without_the_warm_up(runs: Runs) -> None:
    """One step's launches, then two steps' exactly twice as many: the two warm-up steps
    (NVTX "warmup") are not among them; the backward pass, launched from autograd's thread,
    is (the step replayed from a CUDA graph, launched from one thread, has as many)."""
    one = runs["eager"].record.ranking.processes[0]
    two = runs["two steps"].record.ranking.processes[0]
    assert two.launches == 2 * one.launches
    assert {(k.name, k.grid, k.block) for k in two.kernels} == {
        (k.name, k.grid, k.block) for k in one.kernels}
    assert runs["eager"].record.ranking.window["nvtx_over"] == "every thread"
    graph = runs["graph"].record.ranking.processes[0]
    assert {(k.mangled, k.grid, k.block, k.launches) for k in graph.kernels} == {
        (k.mangled, k.grid, k.block, k.launches) for k in one.kernels}


def test_a_compiled_step_ranks_inductors_kernels(runs: Runs) -> None:
    names = [k.name for k in runs["compiled"].record.ranking.processes[0].kernels]
    assert any(name.startswith("triton_") for name in names), names[:10]


def test_a_cuda_graph_step_ranks_each_kernel_node(runs: Runs) -> None:
    """The graph's kernels one node at a time, each profiled as a launch."""
    graph = runs["graph"].record.ranking
    assert graph.ncu["metrics"] == ["gpu__time_duration.sum"]
    assert len(graph.processes[0].kernels) > TOP
    manifest = runs["graph"].manifest
    assert all("--graph-profiling" in argv and argv[argv.index("--graph-profiling") + 1]
               == "node" for argv in manifest["ncu"]["command_lines"])


def test_pages_diff_and_history_read_the_run(runs: Runs, tmp_path: Path) -> None:
    run = runs["eager"]
    done = _ncuh("writeup", str(run.path), "--out", str(tmp_path / "pages"))
    assert done.returncode == 0, done.stdout + done.stderr
    index = (tmp_path / "pages" / "index.md").read_text()
    assert index.count("](") >= TOP and "not judged" not in index
    done = _ncuh("diff", str(run.path), str(run.path))
    assert done.returncode == 0, done.stdout + done.stderr
    first = run.record.ranking.processes[0].kernels[0]
    assert "program GPU time" in done.stdout
    assert kernel_key(first).split(" <<<")[1] in done.stdout.replace("\\<", "<")


def test_torchrun_on_two_gpus_ranks_and_pages_each_rank(tmp_path: Path) -> None:
    _ready()
    gpus = list_gpus()
    if len(gpus) < 2:
        pytest.skip(f"gpu test: needs two GPUs, nvidia-smi lists {len(gpus)}")
    run = _top(tmp_path / "runs", sys.executable, "-m", "torch.distributed.run",
               "--nproc-per-node", "2", str(PROGRAM), *SMALL, "--steps", "1", top=2)
    ranking = run.record.ranking
    assert [(p.key, p.device) for p in ranking.processes] == [("gpu0", 0), ("gpu1", 1)]
    assert not any(k.name.startswith("nccl") for p in ranking.processes for k in p.kernels)
    _assert_reports_hold_the_ranked_launches(run)
    assert sorted(e.label[:4] for e in run.entries) == ["gpu0", "gpu0", "gpu1", "gpu1"]
    done = _ncuh("writeup", str(run.path), "--out", str(tmp_path / "pages"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "pages" / "gpu0" / "index.md").is_file()
    assert (tmp_path / "pages" / "gpu1" / "index.md").is_file()
