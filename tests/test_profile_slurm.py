"""`ncuh profile --slurm` against a real single-node Slurm, with the stand-in ncu.

The module starts its own cluster in a temporary directory: munged with a fresh key, slurmctld
and slurmd from Debian's slurm-wlm, a generated slurm.conf (free ports, this host as the only
node). It needs root (slurmd runs jobs as their user) and the binaries (`.ci/run` installs
them); without either, or when the cluster does not come up, the tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from standin_support import standins_fixture  # noqa: F401  (the `standins` fixture)

from harness.cli import main
from harness.rundir.manifest import load_run

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _conf(root: Path, host: str) -> str:
    return "\n".join([
        "ClusterName=ncuhtest", f"SlurmctldHost={host}",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge.sock'}",
        f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root / 'slurmd.log'}",
        f"PlugStackConfig={root / 'plugstack.conf'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "MpiDefault=none",
        "ReturnToService=2", "SchedulerType=sched/backfill", "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        # sbatch --wait polls every 2 s while that is not under half of MinJobAge (how long a
        # completed job's record is kept, here 3 s longer than a poll's wait); from the
        # default 300 s, its second poll is 8 s on.
        "MinJobAge=5",
        f"NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN",
        f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP", "",
    ])


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A running one-node cluster; yields its slurm.conf."""
    missing = [name for name in BINARIES if shutil.which(name) is None]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing; apt-get install "
                    "slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("starting slurmd needs root")
    root = tmp_path_factory.mktemp("slurm")
    for folder in ("state", "spool"):
        (root / folder).mkdir()
    (root / "plugstack.conf").write_text("")
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, host))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started = []
    try:
        for argv in (
            ["munged", f"--key-file={key}", f"--socket={root / 'munge.sock'}",
             f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'munged.log'}",
             f"--seed-file={root / 'munge.seed'}", "--force"],
            ["slurmctld", "-f", str(conf)],
            ["slurmd", "-f", str(conf)],
        ):
            completed = subprocess.run(argv, env=env, capture_output=True, text=True,
                                       timeout=30, check=False)
            if completed.returncode != 0:
                pytest.skip(f"{argv[0]} did not start: {completed.stderr.strip()[-300:]}")
            started.append(argv[0])
        deadline = time.monotonic() + 120  # a bound a busy machine never nears
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                                   text=True, timeout=60, check=False).stdout.strip()
            if state in ("idle", "mix", "alloc"):
                break
            time.sleep(0.5)
        else:
            pytest.skip(f"the Slurm node did not come up (state {state!r})")
        yield conf
    finally:
        if "slurmctld" in started:
            subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True, timeout=30,
                           check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            pid = _pid(root / f"{name}.pid")
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 15)


def test_a_job_array_profiles_each_target_and_merges_into_one_run(
    tmp_path: Path, slurm: Path, standins: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm))
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.2")
    # One task's entry fails (the runner's wrong result): its shard is merged all the same,
    # and the command says so and exits 1, as `ncuh profile` does.
    monkeypatch.setenv("NCUH_FAKE_NCU_FAIL", "register_tiled_512")
    # The tasks are other processes on the "node": they find CuPy installed by looking for it,
    # so a stand-in package stands in for it there (nothing imports it).
    fake = tmp_path / "site"
    (fake / "cupy").mkdir(parents=True)
    (fake / "cupy" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, [
        "profile", "--variant", "naive", "--variant", "register_tiled", "--size", "256",
        "--size", "512", "--metrics-csv", "--out", str(out), "--slurm", "--slurm-arg=--wait",
        "--slurm-arg=--time=5"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "submitted job array" in result.stderr and "(4 tasks)" in result.stderr
    assert ("ncuh: failed: register_tiled_512: register_tiled 256x256x256: wrong result "
            "(relative error 0.5)") in result.stderr
    merged = Path(result.stdout.strip().splitlines()[-1])
    run = load_run(merged)
    assert [(e.label, e.status) for e in run.entries] == [
        ("naive_256", "ok"), ("naive_512", "ok"), ("register_tiled_256", "ok"),
        ("register_tiled_512", "failed")]
    assert all(e.report.is_file() for e in run.entries if e.ok)
    assert [e["shard"] for e in run.manifest["entries"]] == [e.label for e in run.entries]
    assert run.manifest["metrics"]["status"] == "ok"
    job_dir = merged.with_name(merged.name + ".slurm")
    script = (job_dir / "job.sh").read_text()
    assert "#SBATCH --array=0-3" in script
    tasks = json.loads((job_dir / "tasks.json").read_text())["tasks"]
    assert [(t["variants"], t["sizes"]) for t in tasks] == [
        (["naive"], ["256x256x256"]), (["naive"], ["512x512x512"]),
        (["register_tiled"], ["256x256x256"]), (["register_tiled"], ["512x512x512"])]
    assert all(Path(t["project"]).is_absolute() for t in tasks)  # found from any node
    logs = sorted((job_dir / "logs").glob("task-*.out"))
    assert len(logs) == 4  # one per array task: Slurm ran four tasks
    runs = [json.loads(line) for line in standins.read_text().splitlines()]
    # every task ran its ncu once, the failing one included
    assert sorted(r["label"] for r in runs) == [e.label for e in run.entries]
    result = CliRunner().invoke(main, ["diff", str(merged), str(merged)])
    assert result.exit_code == 0, result.output


def test_without_wait_it_says_how_to_merge(
    tmp_path: Path, slurm: Path, standins: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm))
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--out", str(out), "--slurm", "--slurm-arg=--hold"])
    assert result.exit_code == 0, result.output
    job_dir = Path(result.stdout.strip())
    assert job_dir.name.endswith(".slurm") and (job_dir / "job.sh").is_file()
    assert f"ncuh merge {job_dir / 'shards'}/* --out " in result.stderr
    job_id = result.stderr.split("submitted job array ")[1].split()[0]
    subprocess.run(["scancel", job_id], env={**os.environ}, check=False, timeout=30)


def test_slurm_refuses_what_it_cannot_do_in_one_line(tmp_path: Path) -> None:
    for args, said in [
        (["--bench"], "--bench does not go with --slurm"),
        (["--gpus", "all"], "--gpus does not go with --slurm"),
    ]:
        result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                           "--out", str(tmp_path), "--slurm", *args])
        assert result.exit_code == 2
        assert result.stderr.strip().splitlines() == [f"ncuh: error: {said}: " + (
            "run `ncuh bench` once, apart" if "bench" in said else
            "ask Slurm for GPUs (--slurm-arg)")]
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--slurm-arg=-p x"])
    assert result.exit_code == 2 and "--slurm-arg needs --slurm" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_job_array_never_queued_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """sbatch refusing the job (an empty Slurm configuration) or not found: one line, exit 2,
    and neither the job array's folder nor the --out folder made for it is left."""
    work, out = tmp_path / "work", tmp_path / "work" / "runs" / "slurm"
    work.mkdir()
    args = ["profile", "--variant", "naive", "--size", "256", "--out", str(out), "--slurm"]

    def refused() -> str:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2
        [line] = result.stderr.strip().splitlines()
        return line

    if shutil.which("sbatch"):
        (tmp_path / "slurm.conf").write_text("")
        monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
        line = refused()
        assert line.startswith("ncuh: error: sbatch failed (status 1): sbatch: fatal: ")
        assert line.endswith(": Unable to process configuration file")
        assert list(work.iterdir()) == []
    out.mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    line = refused()
    assert line.startswith("ncuh: error: cannot run sbatch ([Errno 2] No such file")
    assert line.endswith("'sbatch'): is Slurm installed here?")
    assert list(work.iterdir()) == [out.parent] and list(out.iterdir()) == []


def test_a_job_array_that_cannot_be_written_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full disk while the job array is written: one line, exit 2, nothing left of it."""
    from harness.profile import slurm

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(slurm, "atomic_write_text", full)
    out = tmp_path / "runs" / "slurm"
    result = CliRunner().invoke(main, ["profile", "--variant", "naive", "--size", "256",
                                       "--out", str(out), "--slurm"])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("ncuh: error: ") and "No space left on device" in line
    assert list(tmp_path.iterdir()) == []
