"""Post-processing of a profile run, overlapped with ncu: the environment and metrics.csv.

Both are children (`harness.profile.worker`), because CuPy, NVML and NVIDIA's `ncu_report` are
native code: a crash in one costs its own part, recorded in the manifest, not the run.

Nothing waits in front of ncu and as little as possible after it:

* the environment probe starts with the run, beside the first ncu. It starts no CUDA (the
  runner under ncu reports CuPy's view of the device) and lists every GPU with nvidia-smi, so
  the device each entry ran on is matched afterwards by its PCI bus ID;
* each report's share of metrics.csv is exported as soon as its ncu has finished, while ncu
  profiles the next target; at the end the parts are joined in target order (a file copy).

So after the last ncu only that report's export and the join remain. `PostProcessing` is fed
entry by entry; `post_process` does it all at once for a finished list of entries.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.atomic import atomic_path, atomic_write_text
from harness.profile.gpus import Gpu, gpu_for_bus_id
from harness.profile.processes import Job, Spawner, package_environment, result_line
from harness.rundir import METRICS

PARTS_DIR = ".metrics-parts"


class _Entry(Protocol):
    """What post-processing needs of an entry (`run.EntryResult`)."""

    status: str
    environment: dict[str, Any]

    @property
    def label(self) -> str: ...

    @property
    def report_name(self) -> str: ...


def git_commit(path: Path | None = None) -> str | None:
    """The commit of the ncuh checkout, or None when it is not a git work tree."""
    where = path or Path(__file__).resolve().parents[2]
    try:
        completed = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = completed.stdout.strip()
    return commit if completed.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def _worker(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "harness.profile.worker", *args]


def _worker_environment() -> dict[str, str]:
    # A native crash in the worker then leaves a Python traceback in its log.
    return {**package_environment(), "PYTHONFAULTHANDLER": "1"}


def _worker_result(output: str) -> Any:
    from harness.profile.worker import RESULT_PREFIX

    return result_line(output, RESULT_PREFIX)


def _telling_line(output: str, limit: int = 300) -> str:
    """The line of a child's output that says what went wrong (a crash names it first)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for prefix in ("Fatal Python error", "ncuh-worker: ", "Traceback"):
        chosen = next((line for line in lines if line.startswith(prefix)), None)
        if chosen is not None:
            break
    else:
        chosen = lines[-1] if lines else ""
    return chosen if len(chosen) <= limit else chosen[: limit - 1] + "…"


def _status_text(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def _failure_line(what: str, returncode: int, output: str) -> str:
    last = _telling_line(output)
    return f"{what} {_status_text(returncode)}" + (f": {last}" if last else "")


@dataclass
class PostResult:
    """What the post-processing children produced, and how long they took."""

    environment: dict[str, Any]
    metrics: dict[str, Any]
    git_commit: str | None
    seconds: float  # from `finish` being called (the last ncu done) to everything written
    environment_seconds: float = 0.0  # the probe, start to end (beside ncu)
    metrics_seconds: float = 0.0  # the metrics exports, summed over their parts
    gpus: list[Gpu] = field(default_factory=list)  # every GPU the probe saw


@dataclass
class _Timed:
    job: Job
    started: float
    what: str


def _wait_all(jobs: Sequence[_Timed]) -> list[tuple[int, str, float]]:
    """Wait for every job at once: (status, output, seconds it ran) each.

    Each job is waited for on a thread of its own, so that each end is timed where it
    happens; an interrupt reaches this thread, and the caller then kills every job.
    """
    if not jobs:
        return []

    def wait(timed: _Timed) -> tuple[int, str, float]:
        status, output = timed.job.wait()
        return status, output, time.monotonic() - timed.started

    pool = ThreadPoolExecutor(max_workers=len(jobs))
    try:
        futures = [pool.submit(wait, timed) for timed in jobs]
        return [future.result() for future in futures]
    finally:
        # Not waiting for the threads: after an interrupt they end once the caller has
        # killed their jobs.
        pool.shutdown(wait=False)


def _merge_environment(probed: dict[str, Any], cuda: dict[str, Any]) -> dict[str, Any]:
    """The probe's fields, with the runner's CuPy fields first where it has them."""
    merged = {**probed, **{key: value for key, value in cuda.items() if value is not None}}
    if "cuda_runtime" in merged or "cuda_driver" in merged:
        merged["cuda"] = merged.get("cuda_runtime") or merged.get("cuda_driver")
    return merged


def _environment_result(returncode: int, output: str) -> dict[str, Any]:
    result = _worker_result(output)
    if returncode == 0 and isinstance(result, dict):
        return result
    return {"probe_error": _failure_line("the environment probe", returncode, output)}


class PostProcessing:
    """The environment probe (started at once) and one metrics export per finished report."""

    def __init__(self, run_dir: Path, ncu: Path, spawner: Spawner, *,
                 metrics_csv: bool = True, export_jobs: int | None = None) -> None:
        self.run_dir = run_dir
        self.ncu = ncu
        self.spawner = spawner
        self.metrics_csv = metrics_csv
        # While ncu runs beside it, an export uses a few cores only: ncu and the runner need
        # theirs. The export after the last ncu may use them all (the worker's default).
        self.export_jobs = export_jobs or max(1, min(4, (os.cpu_count() or 2) // 4))
        self.parts_dir = run_dir / PARTS_DIR
        self._parts: list[tuple[str, Path, _Timed]] = []
        (run_dir / "logs").mkdir(exist_ok=True)
        self._environment = self._start(
            ["environment", str(ncu), "--no-cuda", "--list-gpus"], "environment")

    def _start(self, args: Sequence[str], what: str) -> _Timed:
        started = time.monotonic()
        return _Timed(self.spawner(_worker(args), _worker_environment()), started, what)

    def entry_done(self, entry: _Entry, *, last: bool = False) -> None:
        """Start exporting `entry`'s report now, beside whatever ncu runs next."""
        if not self.metrics_csv or entry.status != "ok":
            return
        self.parts_dir.mkdir(exist_ok=True)
        part = self.parts_dir / f"{len(self._parts):04d}-{entry.label}.csv"
        jobs = [] if last else ["--jobs", str(self.export_jobs)]
        report = self.run_dir / entry.report_name
        self._parts.append((entry.label, part, self._start(
            ["metrics", str(part), f"{entry.label}={report}", *jobs], f"metrics {entry.label}")))

    def finish(self, entries: Sequence[_Entry]) -> PostResult:
        """Wait for every child, join metrics.csv, and say what the environment was."""
        started = time.monotonic()
        if self.metrics_csv and not self._parts:
            # No report: metrics.csv still says which columns it would have.
            self.parts_dir.mkdir(exist_ok=True)
            self._parts.append(("", self.parts_dir / "empty.csv", self._start(
                ["metrics", str(self.parts_dir / "empty.csv")], "metrics")))
        try:
            commit = git_commit()  # a few milliseconds, while the children work
            waited = _wait_all([self._environment, *(timed for _, _, timed in self._parts)])
        except BaseException:
            self.kill()
            raise
        (env_status, env_output, env_seconds), *exports = waited
        logs = self.run_dir / "logs"
        atomic_write_text(logs / "environment.log", env_output)
        atomic_write_text(logs / "metrics.log", "".join(output for _, output, _ in exports))
        probed = _environment_result(env_status, env_output)
        gpus = [Gpu(**row) for row in probed.pop("gpus", None) or []]
        environment = _environment_for(probed, entries, gpus)
        environment["ncu_path"] = str(self.ncu)
        environment.setdefault("ncu_version", None)
        metrics = self._join(exports) if self.metrics_csv else {
            "status": "skipped", "error": None, "rows": None}
        shutil.rmtree(self.parts_dir, ignore_errors=True)
        return PostResult(
            environment=environment, metrics=metrics, git_commit=commit,
            seconds=time.monotonic() - started, environment_seconds=env_seconds,
            metrics_seconds=sum(seconds for _, _, seconds in exports), gpus=gpus,
        )

    def _join(self, exports: Sequence[tuple[int, str, float]]) -> dict[str, Any]:
        """metrics.csv from the parts, in target order; the first failure fails the table."""
        rows = 0
        for (label, part, _), (status, output, _) in zip(self._parts, exports, strict=True):
            result = _worker_result(output)
            if status != 0 or not isinstance(result, dict) or not part.is_file():
                what = f"metrics export of {label}" if label else "metrics export"
                (self.run_dir / METRICS).unlink(missing_ok=True)
                return {"status": "failed", "error": _failure_line(what, status, output)}
            rows += int(result.get("rows") or 0)
        with atomic_path(self.run_dir / METRICS) as tmp, tmp.open("wb") as joined:
            for number, (_, part, _) in enumerate(self._parts):
                with part.open("rb") as stream:
                    header = stream.readline()
                    if number == 0:
                        joined.write(header)
                    shutil.copyfileobj(stream, joined)
        return {"status": "ok", "error": None, "rows": rows}

    def kill(self) -> None:
        for timed in [self._environment, *(timed for _, _, timed in self._parts)]:
            timed.job.kill()


def _environment_for(probed: dict[str, Any], entries: Sequence[_Entry],
                     gpus: Sequence[Gpu]) -> dict[str, Any]:
    """The probe's fields, the first runner's CuPy fields over them, the GPU matched by bus ID.

    The probe asked nvidia-smi before any runner said which device it saw, so its per-GPU
    fields describe the first GPU; the runner's PCI bus ID then picks the right one's name.
    """
    cuda = next((dict(e.environment) for e in entries if e.status == "ok" and e.environment), {})
    environment = _merge_environment(probed, cuda)
    gpu = gpu_for_bus_id(gpus, cuda.get("pci_bus_id"))
    if gpu is not None:
        environment.setdefault("gpu", gpu.name)
        environment["gpu_uuid"] = gpu.uuid
        environment["gpu_index"] = gpu.index
    return environment


def post_process(run_dir: Path, entries: Sequence[Any], ncu: Path,
                 spawner: Spawner) -> PostResult:
    """All post-processing for finished entries at once (the probe and the exports together)."""
    post = PostProcessing(run_dir, ncu, spawner)
    try:
        for number, entry in enumerate(entries):
            post.entry_done(entry, last=number == len(entries) - 1)
    except BaseException:
        post.kill()
        raise
    return post.finish(entries)
