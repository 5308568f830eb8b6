"""The child processes of `ncuh profile`, and their running side by side, for real (no GPU)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import pytest
from conftest import still_running
from packed_fixtures import (
    H100_PAGES_EARLIER_NAIVE,
    H100_PAGES_NAIVE,
    NAIVE_SMEM_REPORT,
    ncu_page,
    report,
)

from harness.profile import post
from harness.profile import run as lib
from harness.profile import worker as profile_worker
from harness.profile.processes import Job
from harness.profile.worker import WORKER_RESULT_PREFIX
from harness.report.reportfile import export_metrics
from harness.util.atomic import atomic_write_text

REPORT = NAIVE_SMEM_REPORT
# A one-kernel `pages` report (8,292 rows to REPORT's 96,622): for the tests of how the export
# is split, joined and started, which any report shows.
SMALL_REPORT = H100_PAGES_NAIVE


def _export(args: list[str]) -> list[str]:
    return post._child(post.EXPORT_MODULE, args)


def _probe(args: list[str]) -> list[str]:
    return post._child(post.PROBE_MODULE, args)


VERSION_OUTPUT = (
    "NVIDIA (R) Nsight Compute Command Line Profiler\n"
    "Version 2025.3.1.0 (build 36398880) (public-release)\n"
)


def test_metrics_worker_writes_the_labelled_export(tmp_path: Path) -> None:
    out = tmp_path / "metrics.csv"
    status, output = lib.run_command(
        _export([str(out), f"a={SMALL_REPORT}", f"b={SMALL_REPORT}"]),
        post._worker_environment())
    assert status == 0, output
    expected = export_metrics(SMALL_REPORT)
    assert json.loads(output.strip().splitlines()[-1][len(WORKER_RESULT_PREFIX):]) == {
        "rows": 2 * len(expected)}
    table = pd.read_csv(out, keep_default_na=False)
    assert table["label"].tolist() == ["a"] * len(expected) + ["b"] * len(expected)
    assert table["metric"].tolist()[: len(expected)] == expected["metric"].tolist()


def test_metrics_worker_reports_a_bad_report_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"not a report")
    status, output = lib.run_command(
        _export([str(tmp_path / "m.csv"), f"x={bad}"]), post._worker_environment())
    assert status == 2
    assert output.strip().startswith("ncuh-worker: ") and len(output.strip().splitlines()) == 1
    assert not (tmp_path / "m.csv").exists()


def test_environment_worker_answers_in_one_json_line(tmp_path: Path) -> None:
    # A stand-in ncu: the environment child must ask this one, by its path, for its version.
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\necho 'Version 2025.3.1.0 (build 36398880) (public-release)'\n")
    ncu.chmod(0o755)
    status, output = lib.start_command(
        _probe(["environment", str(ncu)]), post._worker_environment()).wait()
    assert status == 0, output
    (line,) = output.strip().splitlines()
    environment = json.loads(line[len(WORKER_RESULT_PREFIX):])
    assert environment["ncuh_version"] == "0.1.0"
    assert environment["ncu_path"] == str(ncu)
    assert environment["ncu_version"] == "2025.3.1.0"
    if importlib.util.find_spec("cupy") is None:
        assert environment["gpu"] is None and environment["cupy"] is None


def test_environment_worker_without_cuda_asks_nvidia_smi_about_the_runners_device(
    tmp_path: Path,
) -> None:
    # Stand-ins for ncu and nvidia-smi; the smi one answers only a query with compute_cap
    # for the device at the bus id given, as a driver from 510 on does.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text("#!/bin/sh\necho 'Version 2025.3.1.0 (build 1)'\n")
    (bin_dir / "nvidia-smi").write_text(
        "#!/bin/sh\n"
        'case "$*" in *compute_cap*--id=0000:1B:00.0*) '
        "echo 'NVIDIA H100 80GB HBM3, 580.159.04, 345, 2619, 1980, 2619, 9.0';; "
        "*) exit 6;; esac\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    # A pynvml that cannot load: where the real one is installed beside a GPU, NVML would
    # answer for the real device before the stand-in nvidia-smi is asked.
    (tmp_path / "pynvml.py").write_text("raise ImportError('no NVML in this test')\n")
    worker_env = post._worker_environment()
    env = {**worker_env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{worker_env['PYTHONPATH']}"}
    status, output = lib.start_command(_probe(
        ["environment", str(bin_dir / "ncu"), "--no-cuda", "--pci-bus-id", "0000:1B:00.0"]),
        env).wait()
    assert status == 0, output
    (line,) = output.strip().splitlines()
    environment = json.loads(line[len(WORKER_RESULT_PREFIX):])
    assert environment["gpu"] == "NVIDIA H100 80GB HBM3"
    assert environment["compute_capability"] == "9.0"
    assert environment["driver"] == "580.159.04"
    assert environment["clocks"] == {"sm_mhz": 345.0, "mem_mhz": 2619.0,
                                     "max_sm_mhz": 1980.0, "max_mem_mhz": 2619.0}
    assert environment["pci_bus_id"] == "0000:1B:00.0"
    assert environment["ncu_version"] == "2025.3.1.0"
    # CuPy was left alone, installed or not: its fields come from the runner.
    assert environment["cupy"] is None and environment["cuda_runtime"] is None


def test_environment_asks_the_given_ncu_for_its_version_exactly_once() -> None:
    asked: list[list[str]] = []

    def runner(argv: Sequence[str]) -> str | None:
        asked.append(list(argv))
        return VERSION_OUTPUT if argv[1:] == ["--version"] else None

    environment = profile_worker.environment("/opt/ncu/ncu", runner=runner)
    assert [argv for argv in asked if "--version" in argv] == [["/opt/ncu/ncu", "--version"]]
    assert environment["ncu_version"] == "2025.3.1.0"
    assert environment["ncu_path"] == "/opt/ncu/ncu"
    asked.clear()
    assert profile_worker.environment(None, runner=runner)["ncu_version"] is None
    assert not [argv for argv in asked if "--version" in argv]


def _meeting(folder: Path, me: str, other: str) -> list[str]:
    """A child that says it is here, then waits for `other` to be here too before it answers
    like a worker: both finish only if both ran at once (one after the other, the first would
    wait in vain, give up and fail)."""
    code = (
        "import json, pathlib, sys, time\n"
        f"folder = pathlib.Path({str(folder)!r})\n"
        f"(folder / {me + '.here'!r}).touch()\n"
        "for _ in range(6000):\n"
        f"    if (folder / {other + '.here'!r}).exists():\n"
        f"        print({WORKER_RESULT_PREFIX!r} + json.dumps({{'rows': 0, 'met': {other!r}}}))\n"
        "        sys.exit(0)\n"
        "    time.sleep(0.01)\n"
        "sys.exit(1)\n"
    )
    return [sys.executable, "-c", code]


def test_post_processing_runs_both_children_as_processes_at_the_same_time(
    tmp_path: Path,
) -> None:
    started: list[list[str]] = []
    meeting = tmp_path / "meeting"
    meeting.mkdir()

    def spawner(argv: Sequence[str], env: dict[str, str] | None) -> Job:
        started.append(list(argv))
        if post.EXPORT_MODULE in argv:  # the stand-in exports nothing: an empty table instead
            Path(argv[3]).write_text("label,kernel_id\n")
            return lib.start_command(_meeting(meeting, "metrics", "environment"), env)
        return lib.start_command(_meeting(meeting, "environment", "metrics"), env)

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = post.post_process(run_dir, [], Path("/usr/bin/ncu"), spawner)
    assert [argv[2] for argv in started] == [post.PROBE_MODULE, post.EXPORT_MODULE]
    assert started[0][3:] == ["environment", "/usr/bin/ncu", "--no-cuda", "--list-gpus"]
    metrics = json.loads((run_dir / "logs" / "metrics.log").read_text()[len(WORKER_RESULT_PREFIX):])
    # each child saw the other running: they ran at the same time
    assert metrics["met"] == "environment" and result.environment["met"] == "metrics"
    assert result.metrics == {"status": "ok", "error": None, "rows": 0}
    assert (run_dir / "metrics.csv").read_text() == "label,kernel_id\n"
    assert result.environment["ncu_path"] == "/usr/bin/ncu"


def test_an_interrupt_during_post_processing_stops_both_children(
    tmp_path: Path, ctrl_c_raises: Callable[[Path, int], threading.Thread]
) -> None:
    pids = tmp_path / "pids"
    # Each stands in for a worker with a grandchild: both process groups must go. The sleep
    # outlives the bound below, so a child left running fails the test.
    script = f"sleep 120 & echo $$ $! >> {shlex.quote(str(pids))}; wait"

    def spawner(argv: Sequence[str], env: dict[str, str] | None) -> Job:
        return lib.start_command(["sh", "-c", script], env)

    interrupter = ctrl_c_raises(pids, 4, 2)  # once both children are up and held
    with pytest.raises(KeyboardInterrupt):
        post.post_process(tmp_path, [], Path("ncu"), spawner)
    interrupter.join()
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 4
    assert still_running(started) == [], started


def test_the_runner_without_nvtx_fails_in_one_line_before_compiling(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], golden
) -> None:
    from harness.gpu import runner
    from harness.profile.ncu_errors import classify

    monkeypatch.setattr(runner, "require_gpu", lambda: object())
    monkeypatch.setattr(runner, "nvtx_available", lambda: False)
    monkeypatch.setattr(runner, "prepare", None)  # compiling would raise TypeError
    status = runner.main(["--variant", "naive", "--size", "256"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("ncuh-runner: ") and err.count("\n") == 1
    golden("runner_without_nvtx", err)
    failure = classify(err + "==ERROR== The application returned an error code (1).\n", 1,
                       report_written=False)
    assert failure is not None and failure.kind == "runner" and not failure.fatal
    assert failure.message.endswith("pass --capture kernel to ncuh profile")


@pytest.mark.parametrize("jobs", [1, 3, 4])
def test_metrics_export_in_parallel_parts_equals_the_serial_export(
    tmp_path: Path, jobs: int
) -> None:
    out = tmp_path / "run" / "metrics.csv"
    out.parent.mkdir()
    # in a worker process of its own, as `ncuh profile` runs it: one thread, so it forks; the
    # serial export too, in a process of its own (this one has read other reports, which
    # changes a few units ncu_report answers)
    environment = post._worker_environment()
    status, output = lib.run_command(
        _export([str(out), f"a={SMALL_REPORT}", f"b={SMALL_REPORT}", "--jobs", str(jobs)]),
        environment)
    assert status == 0, output
    rows = json.loads(output.strip().splitlines()[-1][len(WORKER_RESULT_PREFIX):])["rows"]
    serial = subprocess.run([sys.executable, "-m", "harness", "export", str(SMALL_REPORT)],
                            env=environment, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    lines = out.read_text(encoding="utf-8").splitlines()
    assert rows == 2 * (len(serial) - 1) == len(lines) - 1
    assert lines[0] == "label," + serial[0]
    assert lines[1:] == [f"{label},{row}" for label in "ab" for row in serial[1:]]
    assert sorted(p.name for p in out.parent.iterdir()) == ["metrics.csv"]  # no part left


def test_an_export_started_early_waits_for_its_go_ahead(tmp_path: Path) -> None:
    out, go = tmp_path / "m.csv", tmp_path / "m.go"
    job = lib.start_command(_export([str(out), f"a={SMALL_REPORT}", "--after", str(go)]),
                            post._worker_environment())
    # Its imports are done once ncu_report's native module is mapped in; then it waits.
    maps = Path(f"/proc/{job.process.pid}/maps")  # type: ignore[attr-defined]
    for _ in range(12_000):
        if job.process.poll() is not None or "_ncu_report" in maps.read_text():  # type: ignore[attr-defined]
            break
        time.sleep(0.005)
    assert job.process.poll() is None  # type: ignore[attr-defined]  # still waiting for its go
    assert not out.exists()
    # As `ncuh profile` does (atomically): a plain write can be read while still empty.
    atomic_write_text(go, "go 2")
    status, output = job.wait()
    assert status == 0, output
    rows = json.loads(output.strip().splitlines()[-1][len(WORKER_RESULT_PREFIX):])["rows"]
    assert rows == len(out.read_text().splitlines()) - 1 > 1000


def test_an_export_told_to_skip_writes_nothing(tmp_path: Path) -> None:
    out, go = tmp_path / "m.csv", tmp_path / "m.go"
    go.write_text("skip")
    status, output = lib.run_command(
        _export([str(out), f"a={tmp_path / 'missing.ncu-rep'}", "--after",
                      str(go)]), post._worker_environment())
    assert status == 0, output
    assert json.loads(output.strip().splitlines()[-1][len(WORKER_RESULT_PREFIX):]) == {
        "rows": 0, "skipped": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.go"]


@pytest.mark.parametrize("jobs", [2, 3])
def test_an_export_in_parts_says_what_the_whole_export_and_ncu_say(
    tmp_path: Path, jobs: int
) -> None:
    """Each part is a fresh child. ncu_report names a derived metric's unit from the units
    asked before it in the process ("byte" asked alone, "sector" in order, as ncu's raw page
    says): every part asks those first, so the parts join into the whole export, byte for
    byte."""
    tables = {}
    for count in (1, jobs):
        out = tmp_path / f"metrics_{count}.csv"
        status, output = lib.run_command(
            _export([str(out), f"a={REPORT}", "--jobs", str(count)]),
            post._worker_environment())
        assert status == 0, output
        tables[count] = out.read_bytes()
    assert tables[jobs] == tables[1]
    excessive = [line.split(b",") for line in tables[jobs].splitlines()
                 if b",derived__memory_l2_theoretical_sectors_global_excessive,," in line]
    raw = pd.read_csv(ncu_page(REPORT, ".raw.csv"), nrows=1)
    assert raw["derived__memory_l2_theoretical_sectors_global_excessive"][0] == "sector"
    assert [row[-1] for row in excessive] == [b"sector", b"sector"]  # both kernels


# A `pages` report from before the sectors per instruction left `pages`: it still
# holds the derived metric whose unit differs from `full`'s.
PAGES_REPORT = H100_PAGES_EARLIER_NAIVE
FULL_REPORT = report(Path(__file__).parent / "fixtures" / "h100_full_naive_1024.ncu-rep")
EXCESSIVE = "derived__memory_l2_theoretical_sectors_global_excessive"


@pytest.mark.parametrize("jobs", [1, 3])
def test_each_report_of_an_export_keeps_the_unit_ncu_gives_it(tmp_path: Path, jobs: int) -> None:
    """ncu_report keeps a derived metric's unit per process, the first report's winning: the
    `pages` set's is in bytes (ncu's raw page: Mbyte), `full`'s in sectors. Each report of one
    export is read in processes of its own, so each says what its own raw page says."""
    out = tmp_path / "metrics.csv"
    # In a worker process of its own, as `ncuh profile` and `ncuh export` run it: this test
    # process has read other reports, and forked children would inherit what it resolved.
    status, output = lib.run_command(
        _export([str(out), f"p={PAGES_REPORT}", f"f={FULL_REPORT}",
                      f"p2={PAGES_REPORT}", "--jobs", str(jobs)]), post._worker_environment())
    assert status == 0, output
    table = pd.read_csv(out, keep_default_na=False)
    assert {"rows": len(table)} == json.loads(output.strip().splitlines()[-1][
        len(WORKER_RESULT_PREFIX):])
    units = table[(table["metric"] == EXCESSIVE) & (table["instance"] == "")]
    assert units.set_index("label")["unit"].to_dict() == {"p": "byte", "f": "sector",
                                                          "p2": "byte"}
    for path, unit in ((PAGES_REPORT, "Mbyte"), (FULL_REPORT, "sector")):
        raw = pd.read_csv(ncu_page(path, ".raw.csv"), nrows=1)
        assert raw[EXCESSIVE][0] == unit


_CRASHING_EXPORT = """
import os, signal, sys
from pathlib import Path
from harness.errors import NcuhError
from harness.report import metrics_export
def crash(task):
    os.kill(os.getpid(), signal.SIGSEGV)  # as ncu_report's native code may
metrics_export._export_part = crash  # the forked workers see it
out, pages, full = map(Path, sys.argv[1:])
try:
    metrics_export.export_metrics_csv(out, [("p", pages), ("f", full)], jobs=2)
except NcuhError as error:
    print(error)
"""


def test_an_export_child_that_crashes_is_one_error_and_no_file(tmp_path: Path) -> None:
    # in a process of its own, as `ncuh profile` runs the export: one thread, so it forks
    out = tmp_path / "out" / "metrics.csv"
    out.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    said = subprocess.run([sys.executable, "-c", _CRASHING_EXPORT, str(out), str(PAGES_REPORT),
                           str(FULL_REPORT)], env=env, capture_output=True, text=True,
                          check=True).stdout
    assert said == f"{PAGES_REPORT}: exporting it crashed (in ncu_report)\n"
    assert list(out.parent.iterdir()) == []  # no metrics.csv, no parts folder
