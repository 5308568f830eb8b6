"""`ncuh profile` without a GPU: ncu is replaced by a fake that writes a real recorded report.

The fake answers exactly like ncu would for the argv it gets (it reads `-o` and the runner's
`--label`), so the command lines, the manifest, the atomic run directory, the carry-on after a
failure and every exit-2 case are checked end to end through the real CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import still_running
from packed_fixtures import H100_PAGES_NAIVE, NAIVE_SMEM_REPORT

from harness.cli import main
from harness.profile import run as lib
from harness.profile import worker as profile_worker
from harness.profile.ncu_command import NcuSettings
from harness.report.reportfile import export_metrics
from harness.rundir.manifest import load_run

# What the stand-in ncu writes unless a test needs two kernels: one kernel of the `pages`
# set, 13 times smaller, so the exports that follow it are quick.
SMALL_REPORT = H100_PAGES_NAIVE
NCU = Path("/opt/nvidia/nsight-compute/2025.3.1/ncu")
VERSION_OUTPUT = (
    "NVIDIA (R) Nsight Compute Command Line Profiler\n"
    "Copyright (c) 2018-2025 NVIDIA Corporation\n"
    "Version 2025.3.1.0 (build 36398880) (public-release)\n"
)
PERM_OUTPUT = (
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions and "
    "to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    "==PROF== Disconnected from process 4242\n"
)
ENVIRONMENT = {
    "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "driver": "580.159.04",
    "cuda": "13.0", "cuda_driver": "13.0", "cupy": None, "cuda_runtime": None,
    "clocks": {"sm_mhz": 1980.0, "mem_mhz": 2619.0}, "ncu_version": None,
}
# What the runner under ncu reports (harness.gpu.env.cuda_fields on an H100).
RUNNER_CUDA_FIELDS = {
    "cupy": "14.2.0", "cuda_runtime": "13.2", "cuda_driver": "13.0",
    "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132,
    "l2_cache_bytes": 52428800, "memory_bytes": 84929216512, "pci_bus_id": "0000:1B:00.0",
}
PASSES = 38  # what ncu 2025.3 printed for --set full on the H100
NO_DEVICE_OUTPUT = (
    "==PROF== Connected to process 4243 (/usr/bin/python3.12)\n"
    "==ERROR== cudaErrorNoDevice: no CUDA-capable device is detected\n"
    "==PROF== Disconnected from process 4243\n"
)


# ------------------------------------------------------------------ a small stand-in chain

# A real project file (naive, register_tiled that needs multiples of BM=64) whose kernels are
# named like those of the recorded report; see its ncuh.toml.
STUB = Path(__file__).parent / "projects" / "profile_stub" / "ncuh.toml"


@pytest.fixture(autouse=True)
def fake_machine(monkeypatch: pytest.MonkeyPatch,
                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """A chain, an ncu on PATH and CuPy installed, none of them real; a cache of its own."""
    monkeypatch.setenv("NCUH_PROJECT", str(STUB))
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.setattr("harness.util.ncu_executable", lambda: NCU)
    monkeypatch.setattr(lib, "cupy_installed", lambda: True)


class FakeNcu:
    """Answers each ncu argv: by default writes the recorded report and a runner result."""

    def __init__(self, behaviour: dict[str, Any] | None = None) -> None:
        self.behaviour = behaviour or {}
        self.calls: list[list[str]] = []
        self.envs: list[dict[str, str] | None] = []
        # Set by a test: both post-processing workers must reach it together (or time out).
        self.barrier: threading.Barrier | None = None
        self.worker_times: dict[str, tuple[float, float]] = {}
        self.report = SMALL_REPORT  # what each profiled entry's report is a copy of

    def __call__(self, argv: Sequence[str], env: dict[str, str] | None = None,
                 on_output: Any = None, *, on_start: Any = None,
                 on_output_at: Any = None) -> tuple[int, str]:
        argv = list(argv)
        self.calls.append(argv)
        self.envs.append(env)
        if on_start is not None:  # as run_command does once the command has started
            on_start()
        status, output = self.answer(argv)
        for line in output.splitlines(keepends=True):  # as it comes: line by line
            if on_output is not None:
                on_output(line)
            if on_output_at is not None:
                on_output_at(line, time.monotonic())
        return status, output

    def answer(self, argv: list[str]) -> tuple[int, str]:
        if argv[1:] == ["--version"]:
            return 0, VERSION_OUTPUT
        if argv[1:3] == ["-m", "harness.profile.worker"]:
            return self.worker(argv[3:])
        if argv[1:3] == ["-m", "harness.report.metrics_export"]:
            return self.worker(["metrics", *argv[3:]])
        report = Path(argv[argv.index("-o") + 1])
        label = report.name.removesuffix(".ncu-rep")
        action = self.behaviour.get(label, "ok")
        if isinstance(action, BaseException):
            raise action
        if action == "ok":
            shutil.copyfile(self.report, report)
            result = {"kernel_name": f"k_{label}", "rel_error": 1.5e-7,
                      "environment": RUNNER_CUDA_FIELDS}
            return 0, (
                "==PROF== Connected to process 1\n"
                f'==PROF== Profiling "k_{label}" - 0: 0%....50%....100% - {PASSES} passes\n'
                f"ncuh-runner-result: {json.dumps(result)}\n"
                "==PROF== Disconnected from process 1\n"
            )
        return action  # (status, output)

    def worker(self, args: list[str]) -> tuple[int, str]:
        """The real metrics worker, in a process of its own; the environment worker's answer."""
        started = time.monotonic()
        if self.barrier is not None:
            self.barrier.wait()  # BrokenBarrierError when the other worker is not running
        try:
            return self._worker(args)
        finally:
            self.worker_times[args[0]] = (started, time.monotonic())

    def _worker(self, args: list[str]) -> tuple[int, str]:
        action = self.behaviour.get(args[0], "ok")
        if action != "ok":
            return action
        if args[0] == "environment":
            # What the real worker prints on an H100 with --no-cuda (the worker itself:
            # test_profile_worker).
            env = {**ENVIRONMENT, "ncu_path": args[1], "ncu_version": "2025.3.1.0"}
            return 0, profile_worker.WORKER_RESULT_PREFIX + json.dumps(env) + "\n"
        # The real worker, in a process of its own as `ncuh profile` starts it: it reads each
        # report as a fresh process does (this one has read others), in parts where it has
        # cores for them (NCUH_JOBS).
        done = subprocess.run([sys.executable, "-m", "harness.report.metrics_export",
                               *args[1:]], env=_fresh_environment(), capture_output=True,
                              text=True, check=False)
        return done.returncode, done.stdout + done.stderr

    @property
    def profiled(self) -> list[list[str]]:
        return [argv for argv in self.calls if "-o" in argv]


@pytest.fixture
def fake_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
             ) -> FakeNcu:
    # a cache of its own: plans and section overlays that another test's fake ncu left in
    # the shared test cache (another worker, another order) never change these command lines
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    fake = FakeNcu()
    monkeypatch.setattr(lib, "run_command", fake)
    monkeypatch.setattr(lib, "start_command", lib.in_threads(fake))
    return fake


def _child_name(argv: list[str]) -> str:
    """What a command the fake saw started: `environment`, `metrics` (the two children), `ncu`."""
    if "harness.profile.worker" in argv:
        return argv[3]
    return "metrics" if "harness.report.metrics_export" in argv else "ncu"


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(main, ["profile", *args], catch_exceptions=False)


def only_run(out: Path) -> Path:
    children = list(out.iterdir())
    assert len(children) == 1, children
    return children[0]


def _fresh_environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def export_run(*args: str) -> subprocess.CompletedProcess[str]:
    """`ncuh export ARGS` in a process of its own, as a user runs it (ncu_report answers a few
    units from what its process read before: this test process has read other reports)."""
    return subprocess.run([sys.executable, "-m", "harness", "export", *args],
                          env=_fresh_environment(), capture_output=True, text=True,
                          check=False)


def error_lines(result: Any) -> list[str]:
    stderr = result.stderr if hasattr(result, "stderr") else result.output
    return [line for line in stderr.splitlines() if line.startswith("ncuh: error:")]


# ------------------------------------------------------------------ the run directory


def test_profile_two_variants_writes_a_complete_run_directory(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    out = tmp_path / "runs"
    result = invoke(["--variant", "naive", "--variant", "register_tiled", "--size", "256",
                     "--set", "basic", "--metrics-csv", "--out", str(out)])
    assert result.exit_code == 0, result.output
    run_dir = only_run(out)
    assert run_dir.name.endswith("-naive-and-1-more")
    assert result.stdout.strip().splitlines()[-1] == str(out / run_dir.name)

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["schema"] == "ncuh.run/2"
    assert manifest["ncuh_version"] == "0.1.0"
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).parent, check=False).stdout.strip()
    assert manifest["git_commit"] == (head or None)
    env = manifest["environment"]
    assert env["gpu"] == "NVIDIA H100 80GB HBM3"
    assert env["compute_capability"] == "9.0"
    assert env["ncu_version"] == "2025.3.1.0"
    assert env["ncu_path"] == str(NCU)
    assert manifest["variants"] == ["naive", "register_tiled"]
    assert manifest["sizes"] == [[256, 256, 256]]
    ncu = manifest["ncu"]
    assert (ncu["set"], ncu["clock_control"], ncu["cache_control"], ncu["replay_mode"]) == (
        "basic", "base", "all", "kernel")
    assert ncu["config_file"] == "off" and ncu["capture"] == "nvtx"
    # The recorded command lines are the ones that ran, with the final directory's paths.
    ran = [[arg.replace(str(argv_dir(argv)), str(run_dir)) for arg in argv]
           for argv in fake_ncu.profiled]
    assert ncu["command_lines"] == ran
    first = ncu["command_lines"][0]
    # the sources the kernels' line info names are imported, looked up in the project's folder
    assert first[:18] == [
        str(NCU), "--config-file", "off", "--set", "basic", "--clock-control", "base",
        "--cache-control", "all", "--replay-mode", "kernel", "--import-source", "yes",
        "--source-folders", str(STUB.resolve().parent), "--nvtx", "--nvtx-include",
        "ncuh-naive_256/",
    ]
    assert ncu["import_source"] is True
    assert ncu["source_folders"] == [str(STUB.resolve().parent)]
    assert first[18:24] == ["-k", "regex:^sgemm_naive$", "-o",
                            str(run_dir / "naive_256.ncu-rep"), "-f", sys.executable]
    assert first[24:] == ["-m", "harness.gpu.runner", "--project", str(STUB.resolve()),
                          "--variant", "naive", "--size", "256x256x256",
                          "--label", "naive_256", "--warmup", "3", "--capture", "nvtx"]
    assert manifest["project"]["name"] == "profile-stub"
    assert manifest["project"]["path"] == str(STUB.resolve())
    # what the pages need, so that writeup never loads the project again
    assert [(v["name"], v["iteration"], v["title"], v["previous"], v["kernel_name"])
            for v in manifest["project"]["chain"]] == [
        ("naive", 0, "Naive", None, "sgemm_naive"),
        ("register_tiled", 1, "Register tiled", "naive", "sgemm_register_tiled")]
    assert manifest["project"]["work_model"] == {"flops": False, "bytes": False, "at": [
        {"size": [256, 256, 256], "flops": None, "bytes": None}]}
    assert manifest["started_at"] <= manifest["finished_at"]
    timings = manifest["timings"]
    assert set(timings) == {"ncu_s", "ncu_wall_s", "post_s", "post_environment_s",
                            "post_metrics_s", "total_s"}
    # The probe and the exports run beside ncu: only what is left after the last ncu is post_s.
    assert timings["post_environment_s"] > 0 and timings["post_metrics_s"] > 0
    assert timings["ncu_s"] == pytest.approx(sum(e["seconds"] for e in manifest["entries"]),
                                             abs=0.002)
    assert 0 < timings["post_s"] <= timings["total_s"]
    assert timings["ncu_s"] <= timings["ncu_wall_s"] + 0.002
    assert timings["ncu_wall_s"] + timings["post_s"] <= timings["total_s"] + 0.002
    # The runner imports this very checkout, whatever PYTHONPATH the user had.
    root = str(Path(lib.__file__).resolve().parents[2])
    runner_envs = [env for argv, env in zip(fake_ncu.calls, fake_ncu.envs, strict=True)
                   if "-o" in argv]
    assert all(env["PYTHONPATH"].split(os.pathsep)[0] == root for env in runner_envs)

    entries = manifest["entries"]
    assert [e["label"] for e in entries] == ["naive_256", "register_tiled_256"]
    assert entries[1]["params"] == {"BM": 64, "TM": 8}
    assert all(e["status"] == "ok" and e["error"] is None for e in entries)
    assert [e["passes"] for e in entries] == [PASSES, PASSES]  # as ncu printed them
    assert entries[0]["kernel_name"] == "k_naive_256"
    assert entries[0]["rel_error"] == pytest.approx(1.5e-7)

    run = load_run(run_dir)
    assert [entry.report.name for entry in run.entries] == [
        "naive_256.ncu-rep", "register_tiled_256.ncu-rep"]
    assert all(entry.report.read_bytes() == SMALL_REPORT.read_bytes()
               for entry in run.entries)
    assert run.bench_path is None
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "logs", "manifest.json", "metrics.csv", "naive_256.ncu-rep",
        "register_tiled_256.ncu-rep"]
    assert not list(out.glob(".*"))


def argv_dir(argv: list[str]) -> Path:
    return Path(argv[argv.index("-o") + 1]).parent


def test_the_ncu_that_runs_gets_the_section_folder_of_the_pages_set(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The overlay is chosen for the ncu found, after the plan was checked: the command lines
    # that run and the manifest's must both name it.
    folder = str(tmp_path / "overlay")
    monkeypatch.setattr(lib, "with_section_overlay", lambda settings, ncu: dataclasses.replace(
        settings, section_folder=folder, slimmed_sections=("MemoryWorkloadAnalysis_Chart",)))
    result = invoke(["--variant", "naive", "--size", "256", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    (argv,) = fake_ncu.profiled
    assert argv[3:5] == ["--section-folder", folder]
    manifest = json.loads((only_run(tmp_path / "runs") / "manifest.json").read_text())
    assert manifest["ncu"]["command_lines"][0][3:5] == ["--section-folder", folder]
    assert manifest["ncu"]["section_folder"] == folder


def test_metrics_csv_is_the_tidy_export_of_every_report_with_its_label(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    fake_ncu.report = NAIVE_SMEM_REPORT  # two kernels: each row keeps its own
    outcome = lib.run_profile(lib.ProfileRequest(
        variants=("naive", "register_tiled"), sizes=((256, 256, 256),), out=tmp_path,
        capture="nvtx", metrics_csv=True))
    import pandas as pd

    assert outcome.metrics_error is None
    table = pd.read_csv(outcome.run_dir / "metrics.csv", keep_default_na=False)
    expected = export_metrics(NAIVE_SMEM_REPORT)
    assert list(table.columns) == ["label", *expected.columns]
    assert len(table) == 2 * len(expected)
    assert table["label"].unique().tolist() == ["naive_256", "register_tiled_256"]
    duration = table[(table["label"] == "register_tiled_256") & (table["kernel"] == "sgemm_smem")
                     & (table["metric"] == "gpu__time_duration.sum")]
    truth = expected[(expected["kernel"] == "sgemm_smem")
                     & (expected["metric"] == "gpu__time_duration.sum")]
    assert float(duration["value"].iloc[0]) == pytest.approx(float(truth["value"].iloc[0]))


def test_all_walks_the_chain_and_skips_what_has_no_kernel(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    result = invoke(["--all", "--size", "256", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    run_dir = only_run(tmp_path)
    assert run_dir.name.endswith("-all")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [e["label"] for e in manifest["entries"]] == ["naive_256", "register_tiled_256"]


def test_a_failing_variant_is_recorded_and_the_walk_carries_on_with_exit_1(
    tmp_path: Path, fake_ncu: FakeNcu, golden
) -> None:
    fake_ncu.behaviour["naive_256"] = (1, (
        "==PROF== Connected to process 7\n"
        "ncuh-runner: naive 256x256x256: wrong result (relative error 0.5)\n"
        "==PROF== Disconnected from process 7\n"
        "==ERROR== The application returned an error code (1).\n"
    ))
    result = invoke(["--all", "--size", "256", "--out", str(tmp_path)])
    assert result.exit_code == 1
    golden("failed_variant", "\n".join(line for line in result.stderr.splitlines()
                                       if line.startswith("ncuh: failed: naive_256: ")))
    run_dir = only_run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    failed, ok = manifest["entries"]
    assert failed["status"] == "failed" and failed["report"] is None
    assert failed["error"] == "naive 256x256x256: wrong result (relative error 0.5)"
    assert ok["status"] == "ok"
    assert not (run_dir / "naive_256.ncu-rep").exists()
    assert "wrong result" in (run_dir / "logs" / "naive_256.log").read_text()
    run = load_run(run_dir)
    assert [e.ok for e in run.entries] == [False, True]


def test_an_ncu_error_on_one_kernel_is_that_entrys_failure(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    fake_ncu.behaviour["naive_256"] = (0, "==WARNING== No kernels were profiled.\n")
    outcome = lib.run_profile(lib.ProfileRequest(
        variants=("naive", "register_tiled"), sizes=((256, 256, 256),), out=tmp_path,
        capture="nvtx"))
    assert outcome.exit_code == 1
    assert outcome.failures[0].error.startswith("no kernel was profiled")


# ------------------------------------------------------------------ interruption


def test_an_interrupted_run_never_leaves_a_directory_that_looks_complete(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    fake_ncu.behaviour["register_tiled_256"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        lib.run_profile(lib.ProfileRequest(
            variants=("naive", "register_tiled"), sizes=((256, 256, 256),), out=tmp_path,
            capture="nvtx"))
    assert len(fake_ncu.profiled) == 2
    assert list(tmp_path.iterdir()) == []


def test_sigterm_during_a_run_cleans_up_like_an_interrupt(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    def terminate(argv: Sequence[str], env: Any) -> tuple[int, str]:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        return 0, ""

    with pytest.raises(SystemExit) as excinfo:
        lib.run_profile(lib.ProfileRequest(variants=("naive",), sizes=((256,) * 3,),
                                           out=tmp_path, capture="nvtx"),
                        runner=lambda argv, env: fake_ncu(argv) if argv[1:] == ["--version"]
                        else terminate(argv, env))
    assert excinfo.value.code == 128 + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_run_command_kills_ncu_and_its_children_when_interrupted(
    tmp_path: Path, ctrl_c_raises: Callable[[Path, int], threading.Thread]
) -> None:
    pids = tmp_path / "pids"
    # Stands in for ncu: a parent that starts a long-running child (the runner) and waits,
    # printing nothing: the interrupt must not wait for output. The child outlives the bound
    # below, so a child left alive fails the test instead of ending by itself.
    script = f"sleep 600 & echo $$ $! > {shlex.quote(str(pids))}; wait"
    interrupter = ctrl_c_raises(pids, 2)  # once both are up
    with pytest.raises(KeyboardInterrupt):
        lib.run_command(["sh", "-c", script])
    interrupter.join()
    assert still_running([int(p) for p in pids.read_text().split()]) == []


def test_a_command_interrupted_in_its_own_start_is_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the child exists but before `run_command` holds it (here: as its output
    reader starts) must not leave the child running: nobody else could stop it."""
    from harness.profile import processes

    pids = tmp_path / "pids"
    started = threading.Thread.start

    def start_then_interrupt(thread: threading.Thread) -> None:
        if thread.name.startswith("ncuh-output-"):
            for _ in range(60_000):  # the child is up once it wrote its pids
                if pids.is_file() and len(pids.read_text().split()) >= 2:
                    break
                time.sleep(0.001)
            raise KeyboardInterrupt
        started(thread)

    monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
    script = f"sleep 600 & echo $$ $! > {shlex.quote(str(pids))}; wait"
    with pytest.raises(KeyboardInterrupt):
        lib.run_command(["sh", "-c", script])
    monkeypatch.undo()
    assert still_running([int(p) for p in pids.read_text().split()]) == []
    assert not processes._RUNNING


def test_run_command_returns_status_and_combined_output() -> None:
    status, output = lib.run_command(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert status == 3
    assert output.splitlines() == ["out", "err"]


# ------------------------------------------------------------------ exit status 2


def assert_one_error_line(result: Any, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    lines = error_lines(result)
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


def test_no_ncu_says_how_to_get_it(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("harness.util.ncu_executable", lambda: None)
    result = invoke(["--variant", "naive", "--size", "256", "--out", str(tmp_path)])
    assert_one_error_line(result, "ncu (Nsight Compute) was not found",
                          "https://developer.nvidia.com/nsight-compute")
    assert fake_ncu.calls == [] and list(tmp_path.iterdir()) == []


def test_counter_permission_says_what_to_change_and_stops(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    fake_ncu.behaviour["naive_256"] = (1, PERM_OUTPUT)
    result = invoke(["--all", "--size", "256", "--out", str(tmp_path)])
    line = assert_one_error_line(result, "ERR_NVGPUCTRPERM",
                                 "NVreg_RestrictProfilingToAdminUsers=0", "root")
    assert line.startswith("ncuh: error: GPU performance counters are not permitted")
    assert len(fake_ncu.profiled) == 1  # the machine is the problem: no point going on
    assert list(tmp_path.iterdir()) == []


def test_no_cupy_before_anything_runs(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch, golden
) -> None:
    monkeypatch.setattr(lib, "cupy_installed", lambda: False)
    result = invoke(["--variant", "naive", "--size", "256", "--out", str(tmp_path)])
    line = assert_one_error_line(result, "no NVIDIA GPU visible")
    root = Path(__file__).resolve().parents[1]  # this checkout, installed editable
    assert f"(pip install -e '{root}[cuda13]'," in line
    golden("no_cupy", line.replace(str(root), "CHECKOUT"))
    assert fake_ncu.calls == [] and list(tmp_path.iterdir()) == []


def test_cupy_is_looked_for_without_importing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real cupy_installed
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    installed = lib.cupy_installed()
    assert "cupy" not in sys.modules
    import importlib.util

    assert installed == (importlib.util.find_spec("cupy") is not None)


def test_no_gpu_said_by_ncu_itself_is_one_line_and_leaves_no_run_directory(
    tmp_path: Path, fake_ncu: FakeNcu, golden
) -> None:
    fake_ncu.behaviour["naive_256"] = (1, NO_DEVICE_OUTPUT)
    result = invoke(["--all", "--size", "256", "--metrics-csv", "--out", str(tmp_path)])
    line = assert_one_error_line(result)
    golden("no_gpu_said_by_ncu", line)
    assert len(fake_ncu.profiled) == 1  # fatal: the walk stops at the first entry
    # The environment probe and the first export start beside the first ncu; nothing more.
    workers = [_child_name(argv) for argv in fake_ncu.calls if _child_name(argv) != "ncu"]
    assert workers == ["environment", "metrics"]
    assert list(tmp_path.iterdir()) == []


def test_a_crashing_environment_probe_costs_the_environment_not_the_run(
    tmp_path: Path, fake_ncu: FakeNcu, golden
) -> None:
    fake_ncu.behaviour["environment"] = (-11, "Fatal Python error: Segmentation fault\n")
    result = invoke(["--variant", "naive", "--size", "256", "--metrics-csv", "--out",
                     str(tmp_path)])
    assert result.exit_code == 0, result.output
    run = load_run(only_run(tmp_path))
    golden("environment_probe_killed", run.environment["probe_error"])
    assert run.environment == {
        "probe_error": run.environment["probe_error"],
        **RUNNER_CUDA_FIELDS, "cuda": "13.2",  # the runner's part is kept
        "ncu_path": str(NCU), "ncu_version": None}
    assert [e.ok for e in run.entries] == [True]
    assert run.manifest["metrics"]["status"] == "ok"
    assert "Segmentation fault" in (run.path / "logs" / "environment.log").read_text()


def test_a_crashing_metrics_export_costs_the_table_not_the_run(
    tmp_path: Path, fake_ncu: FakeNcu, golden
) -> None:
    fake_ncu.behaviour["metrics"] = (-11, (
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n"
        '  File "harness/reportfile.py", line 286 in _collect\n\n'
        "Extension modules: numpy._core._multiarray_umath, _ncu_report (total: 2)\n"))
    result = invoke(["--variant", "naive", "--size", "256", "--metrics-csv", "--out",
                     str(tmp_path)])
    assert result.exit_code == 1
    golden("metrics_export_killed", "\n".join(
        line for line in result.stderr.splitlines() if line.startswith("ncuh: failed: ")))
    run = load_run(only_run(tmp_path))
    assert [e.ok for e in run.entries] == [True]
    assert run.manifest["metrics"]["status"] == "failed"
    assert not (run.path / "metrics.csv").exists()
    assert "Segmentation fault" in (run.path / "logs" / "metrics.log").read_text()
    assert run.environment["gpu"] == ENVIRONMENT["gpu"]  # the other child's part is kept


def test_environment_and_metrics_children_run_at_the_same_time(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    # Each worker waits at the barrier for the other: run one after the other, they break it.
    fake_ncu.barrier = threading.Barrier(2, timeout=60)
    result = invoke(["--variant", "naive", "--size", "256", "--metrics-csv", "--out",
                     str(tmp_path)])
    assert result.exit_code == 0, result.output
    (env_start, env_end), (met_start, met_end) = (
        fake_ncu.worker_times["environment"], fake_ncu.worker_times["metrics"])
    assert max(env_start, met_start) < min(env_end, met_end)  # the two intervals overlap
    run = load_run(only_run(tmp_path))
    assert run.manifest["metrics"]["status"] == "ok"
    assert run.environment["ncu_version"] == "2025.3.1.0"
    # Nothing starts before ncu: the probe and the report's export start once it has started
    # (the export then waits for its go-ahead, written when ncu is done).
    order = [_child_name(argv) for argv in fake_ncu.calls]
    assert order == ["ncu", "environment", "metrics"]


def test_the_runners_nvtx_failure_is_that_entrys_one_line_failure(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from harness.gpu import runner

    # The real runner's output when CuPy has no NVTX, fed through the fake ncu.
    monkeypatch.setattr(runner, "require_gpu", lambda: object())
    monkeypatch.setattr(runner, "nvtx_available", lambda: False)
    status = runner.main(["--variant", "naive", "--size", "256", "--capture", "nvtx"])
    said = capsys.readouterr().err
    assert status == 1 and said == f"ncuh-runner: {runner.NO_NVTX_HELP}\n"
    fake_ncu.behaviour["naive_256"] = (1, (
        "==PROF== Connected to process 8\n" + said + "==PROF== Disconnected from process 8\n"
        "==ERROR== The application returned an error code (1).\n"))
    result = invoke(["--all", "--size", "256", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert error_lines(result) == []
    assert (f"ncuh: failed: naive_256: {runner.NO_NVTX_HELP}\n") in result.stderr
    assert "--capture kernel" in runner.NO_NVTX_HELP
    manifest = json.loads((only_run(tmp_path) / "manifest.json").read_text())
    assert [e["status"] for e in manifest["entries"]] == ["failed", "ok"]
    assert manifest["ncu"]["capture"] == "nvtx"  # auto means NVTX when CuPy is installed


def test_no_gpu_reported_by_the_runner_under_ncu(tmp_path: Path, fake_ncu: FakeNcu) -> None:
    fake_ncu.behaviour["naive_256"] = (3, (
        "ncuh-runner: no usable CUDA GPU (CUDARuntimeError: cudaErrorNoDevice)\n"
        "==ERROR== The application returned an error code (3).\n"
    ))
    result = invoke(["--variant", "naive", "--size", "256", "--out", str(tmp_path)])
    assert_one_error_line(result, "no usable CUDA GPU")
    assert list(tmp_path.iterdir()) == []


def test_unknown_variant_lists_the_names(tmp_path: Path, fake_ncu: FakeNcu) -> None:
    result = invoke(["--variant", "naive", "--variant", "tensor_core", "--out", str(tmp_path)])
    assert_one_error_line(result, "tensor_core", "naive, register_tiled")
    assert fake_ncu.calls == [] and not tmp_path.joinpath("x").exists()


@pytest.mark.parametrize("size", ["100", "256x256x100"])
def test_a_size_the_variant_cannot_take(tmp_path: Path, fake_ncu: FakeNcu, size: str) -> None:
    result = invoke(["--variant", "register_tiled", "--size", size, "--out", str(tmp_path)])
    assert_one_error_line(result, "register_tiled", "multiple of BM=64")
    assert fake_ncu.calls == []


@pytest.mark.parametrize("size", ["0", "abc", "64x64", "-5"])
def test_a_malformed_size(tmp_path: Path, fake_ncu: FakeNcu, size: str) -> None:
    result = invoke(["--variant", "naive", f"--size={size}", "--out", str(tmp_path)])
    assert_one_error_line(result, "bad size")
    assert fake_ncu.calls == []


def test_the_reference_is_not_a_variant_to_profile(tmp_path: Path, fake_ncu: FakeNcu) -> None:
    # A project's reference is a library call with no kernel of its own to capture.
    result = invoke(["--variant", "stub_library", "--out", str(tmp_path)])
    assert_one_error_line(result, "unknown variant 'stub_library'")


def test_program_filters_without_a_program(tmp_path: Path, fake_ncu: FakeNcu) -> None:
    result = invoke(["--variant", "naive", "-k", "regex:x", "--out", str(tmp_path)])
    assert_one_error_line(result, "need a program after --")


# ------------------------------------------------------------------ dry run and user programs


def test_dry_run_prints_the_exact_command_lines_without_gpu_or_ncu(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("harness.util.ncu_executable", lambda: None)

    def no_probe(*args: Any) -> None:
        raise AssertionError("a dry run must not look for CuPy or start a child")

    monkeypatch.setattr(lib, "cupy_installed", no_probe)
    monkeypatch.setattr(lib, "start_command", no_probe)
    out = tmp_path / "runs"
    result = invoke(["--variant", "naive", "--sizes", "256,512x256x128", "--set", "detailed",
                     "--section", "SourceCounters", "--metrics", "a.sum,b.sum",
                     "--clock-control", "none", "--out", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    argv = shlex.split(lines[1])
    report = Path(argv[argv.index("-o") + 1])
    assert report.name == "naive_512x256x128.ncu-rep"
    assert report.parent.parent == out.resolve()
    assert argv == [
        "ncu", "--config-file", "off", "--set", "detailed", "--section", "SourceCounters",
        "--metrics", "a.sum,b.sum", "--clock-control", "none", "--cache-control", "all",
        "--replay-mode", "kernel", "--import-source", "yes", "--source-folders",
        str(STUB.resolve().parent), "--nvtx", "--nvtx-include", "ncuh-naive_512x256x128/",
        "-k", "regex:^sgemm_naive$", "-o", str(report), "-f", sys.executable, "-m",
        "harness.gpu.runner", "--project", str(STUB.resolve()),
        "--variant", "naive", "--size", "512x256x128", "--label", "naive_512x256x128",
        "--warmup", "3", "--capture", "nvtx",
    ]
    assert fake_ncu.calls == [] and not out.exists()


def test_dry_run_of_a_user_program(tmp_path: Path, fake_ncu: FakeNcu) -> None:
    result = invoke(["-k", "regex:my_kernel", "--launch-skip", "2", "--launch-count", "1",
                     "--nvtx-include", "step/", "--out", str(tmp_path), "--dry-run", "--",
                     "python", "my_kernel.py", "-k", "x"])
    assert result.exit_code == 0, result.output
    argv = shlex.split(result.stdout.strip())
    # a program's sources are imported where its line info finds them
    assert argv[argv.index("--replay-mode") + 2:] == [
        "--import-source", "yes",
        "--nvtx", "--nvtx-include", "step/", "-k", "regex:my_kernel", "--launch-skip", "2",
        "--launch-count", "1", "-o", argv[argv.index("-o") + 1], "-f",
        "python", "my_kernel.py", "-k", "x",
    ]
    assert argv[argv.index("-o") + 1].endswith("-my_kernel/program.ncu-rep")


def test_a_user_program_gets_the_same_run_directory(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's program need not use CuPy: no CuPy here does not stop it.
    monkeypatch.setattr(lib, "cupy_installed", lambda: False)
    result = invoke(["-k", "regex:sgemm", "--out", str(tmp_path), "--", "python", "mine.py"])
    assert result.exit_code == 0, result.output
    run = load_run(only_run(tmp_path))
    (entry,) = run.entries
    assert (entry.label, entry.variant, entry.size, entry.ok) == ("program", None, None, True)
    assert run.manifest["program"] == ["python", "mine.py"]
    assert run.manifest["ncu"]["capture"] == "user"
    assert run.manifest["ncu"]["command_lines"][0][-5:] == [
        "-o", str(run.path / "program.ncu-rep"), "-f", "python", "mine.py"]
    (program_env,) = [env for argv, env in zip(fake_ncu.calls, fake_ncu.envs, strict=True)
                      if "-o" in argv]
    assert program_env is None  # a user's program keeps the user's environment
    # The environment is still recorded, by the child started after the program ran.
    assert run.environment["gpu"] == ENVIRONMENT["gpu"]
    assert run.environment["ncu_path"] == str(NCU)
    assert run.manifest["timings"]["ncu_s"] == pytest.approx(entry_seconds(run), abs=0.002)


def entry_seconds(run: Any) -> float:
    return sum(raw["seconds"] for raw in run.manifest["entries"])


def test_bench_writes_bench_json_through_the_bench_module(
    tmp_path: Path, fake_ncu: FakeNcu, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    class FakeBenchRun:
        def save(self, path: Path) -> Path:
            path.write_text(json.dumps({"schema": "ncuh.bench/1", "results": []}))
            return path

    def fake_run_bench(project: Any, variants: list[str], sizes: list[Any],
                       **kwargs: Any) -> FakeBenchRun:
        assert project.path == STUB.resolve()
        calls.append((variants, [tuple(size) for size in sizes], kwargs))
        return FakeBenchRun()

    monkeypatch.setattr("harness.gpu.bench.run_bench", fake_run_bench)
    result = invoke(["--variant", "naive", "--size", "256", "--bench", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    run = load_run(only_run(tmp_path))
    bench = run.bench()
    assert bench is not None and bench.schema_ == "ncuh.bench/1" and bench.results == ()
    assert run.manifest["bench"] == "bench.json"
    assert calls == [(["naive"], [(256, 256, 256)], {"references": True})]

    calls.clear()
    result = invoke(["--variant", "naive", "--size", "256", "--bench-sizes", "128,512",
                     "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert calls == [(["naive"], [(128, 128, 128), (512, 512, 512)], {"references": True})]


def test_run_ids_are_unique_within_one_second(tmp_path: Path, fake_ncu: FakeNcu) -> None:
    request = lib.ProfileRequest(variants=("naive",), sizes=((256,) * 3,), out=tmp_path,
                                 capture="nvtx", settings=NcuSettings(set="basic"))
    first = lib.run_profile(request)
    second = lib.run_profile(request)
    assert first.run_dir != second.run_dir
    assert len(list(tmp_path.iterdir())) == 2


def test_ncu_version_is_asked_by_the_environment_child_only(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    result = invoke(["--variant", "naive", "--size", "256", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert not [argv for argv in fake_ncu.calls if argv[1:] == ["--version"]]
    (asked,) = [argv for argv in fake_ncu.calls if "environment" in argv]
    # The ncu that ran, not the one on PATH; no CUDA start, about the runner's device.
    assert asked[3:] == ["environment", str(NCU), "--no-cuda", "--list-gpus"]
    env = load_run(only_run(tmp_path)).environment
    assert env["ncu_version"] == "2025.3.1.0" and env["ncu_path"] == str(NCU)


def test_the_manifest_environment_joins_the_runners_cuda_fields_and_the_probe(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    result = invoke(["--variant", "naive", "--size", "256", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    env = load_run(only_run(tmp_path)).environment
    # From the runner (CuPy under ncu): the runtime, the device's sizes.
    assert (env["cupy"], env["cuda_runtime"], env["cuda"]) == ("14.2.0", "13.2", "13.2")
    assert (env["sm_count"], env["l2_cache_bytes"]) == (132, 52428800)
    # From the probe (nvidia-smi, ncu): driver, clocks, ncu version.
    assert env["driver"] == "580.159.04" and env["clocks"]["sm_mhz"] == 1980.0
    assert env["gpu"] == "NVIDIA H100 80GB HBM3" and env["compute_capability"] == "9.0"


def test_metrics_csv_has_a_label_column_and_matches_ncuh_export(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    result = invoke(["--variant", "naive", "--size", "256", "--metrics-csv", "--out",
                     str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = (only_run(tmp_path) / "metrics.csv").read_text(encoding="utf-8").splitlines()
    exported = export_run(str(SMALL_REPORT)).stdout.splitlines()
    assert lines[0] == "label," + exported[0]
    assert len(lines) == len(exported)
    assert all(line == "naive_256," + row for line, row in zip(lines[1:], exported[1:],
                                                                strict=True))


def test_metrics_csv_is_opt_in_and_ncuh_export_of_the_run_writes_it_later(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    with_table = tmp_path / "with"
    result = invoke(["--variant", "naive", "--variant", "register_tiled", "--size", "256",
                     "--metrics-csv", "--out", str(with_table)])
    assert result.exit_code == 0, result.output
    fake_ncu.worker_times.clear()
    result = invoke(["--variant", "naive", "--variant", "register_tiled", "--size", "256",
                     "--out", str(tmp_path / "without")])
    assert result.exit_code == 0, result.output
    run = load_run(only_run(tmp_path / "without"))
    assert not (run.path / "metrics.csv").exists()
    assert run.manifest["metrics"] == {"status": "skipped", "error": None, "rows": None}
    assert list(fake_ncu.worker_times) == ["environment"]  # no export child was started

    later = tmp_path / "later.csv"
    exported = export_run(str(run.path), "-o", str(later))
    assert exported.returncode == 0, exported.stderr
    written = (only_run(with_table) / "metrics.csv").read_bytes()
    assert later.read_bytes() == written
    rows = written.count(b"\n") - 1
    assert exported.stderr == f"wrote {rows:,} rows to {later}\n"
    to_stdout = export_run(str(run.path))
    assert to_stdout.stdout.encode() == written


def test_export_of_a_run_directory_is_csv_only_and_refuses_a_broken_run(
    tmp_path: Path, fake_ncu: FakeNcu, golden
) -> None:
    fake_ncu.behaviour["register_tiled_256"] = (1, "==ERROR== the kernel failed\n")
    result = invoke(["--variant", "naive", "--variant", "register_tiled", "--size", "256",
                     "--size", "512", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 1, result.output  # one entry failed, three have reports
    run_dir = only_run(tmp_path / "runs")
    exported = export_run(str(run_dir), "-o", str(tmp_path / "t.csv"))
    assert exported.returncode == 0, exported.stderr
    labels = {line.split(",", 1)[0] for line in
              (tmp_path / "t.csv").read_text(encoding="utf-8").splitlines()[1:]}
    assert labels == {"naive_256", "naive_512", "register_tiled_512"}  # the failed one: none
    (tmp_path / "t.csv").unlink()

    result = CliRunner().invoke(main, ["export", str(run_dir), "--format", "json", "-o",
                                       str(tmp_path / "t.json")])
    assert result.exit_code == 2 and len(error_lines(result)) == 1
    golden("run_exports_as_csv_only", error_lines(result)[0].replace(str(run_dir), "RUN"))
    # A later report is broken: the earlier ones' rows are not left behind either.
    (run_dir / "register_tiled_512.ncu-rep").write_bytes(b"not a report")
    for output in (["-o", str(tmp_path / "t.csv")], []):
        exported = export_run(str(run_dir), *output)
        assert exported.returncode == 2 and len(error_lines(exported)) == 1, exported.stderr
        assert exported.stdout == ""
        assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # no part, no temp
    (run_dir / "naive_256.ncu-rep").unlink()
    result = CliRunner().invoke(main, ["export", str(run_dir)])
    assert result.exit_code == 2 and len(error_lines(result)) == 1
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "t.json").exists()


def test_export_of_a_run_directory_takes_a_kernel_filter(
    tmp_path: Path, fake_ncu: FakeNcu
) -> None:
    fake_ncu.report = NAIVE_SMEM_REPORT  # two kernels, one filtered out
    result = invoke(["--variant", "naive", "--variant", "register_tiled", "--size", "256",
                     "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    run_dir = only_run(tmp_path / "runs")
    exported = export_run(str(run_dir), "-k", "regex:smem")
    assert exported.returncode == 0, exported.stderr
    rows = [line.split(",")[:3] for line in exported.stdout.splitlines()[1:]]
    assert {(label, kernel) for label, _, kernel in rows} == {
        ("naive_256", "sgemm_smem"), ("register_tiled_256", "sgemm_smem")}
