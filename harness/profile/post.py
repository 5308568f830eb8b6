"""Post-processing of a profile run, overlapped with ncu: the environment and metrics.csv.

Both run in children (`harness.profile.worker`, `harness.report.metrics_export`), because
CuPy, NVML and `ncu_report` are native code: a crash costs its own part, recorded in the
manifest, not the run. The environment probe
starts beside the first ncu and starts no CUDA; each report's export starts beside its own ncu,
waits for a go-ahead file written when that ncu has finished, and exports while ncu profiles the
next target; the parts are joined in target order. `PostProcessing` is fed target by target;
`post_process` does it all at once for a finished list of entries.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.profile.gpus import Gpu, gpu_for_bus_id
from harness.profile.processes import (
    Job,
    Spawner,
    kill_running,
    package_environment,
    result_line,
)
from harness.rundir import METRICS
from harness.util import atomic_path, atomic_write_text, usable_cores

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


class _GitCommit:
    """`git_commit()` on a thread of its own, started beside ncu: nothing left for after it."""

    def __init__(self) -> None:
        self._commit: str | None = None
        # A daemon: an interrupted run does not wait for git on its way out.
        self._thread = threading.Thread(target=self._run, name="ncuh-git", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._commit = git_commit()

    def result(self) -> str | None:
        self._thread.join()
        return self._commit


# The two children: the environment probe, and the metrics export (it reads reports, so it
# lives in `harness.report`; started by name, never imported here).
PROBE_MODULE = "harness.profile.worker"
EXPORT_MODULE = "harness.report.metrics_export"


def _child(module: str, args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _worker_environment() -> dict[str, str]:
    # A native crash in the worker then leaves a Python traceback in its log.
    return {**package_environment(), "PYTHONFAULTHANDLER": "1"}


def _worker_result(output: str) -> Any:
    from harness.profile.worker import WORKER_RESULT_PREFIX

    return result_line(output, WORKER_RESULT_PREFIX)


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
    started: float  # for an export started early: when it was told to go
    what: str


@dataclass
class _Part:
    """One report's export: its target index, label, CSV part and go-ahead file."""

    index: int
    label: str
    path: Path
    timed: _Timed
    go: Path | None = None


def _wait_all(jobs: Sequence[_Timed]) -> list[tuple[int, str, float]]:
    """Wait for every job at once: (status, output, seconds it ran) each.

    Each job is waited for on a thread of its own, so that each end is timed where it
    happens; an interrupt reaches this thread, and the caller then kills every job.
    """
    if not jobs:
        return []
    # Imported here, not before ncu starts (`run.py` imports it beside the first ncu).
    from concurrent.futures import ThreadPoolExecutor

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
    """The environment probe (started beside the first ncu) and one metrics export per report.

    Constructing it starts nothing: `start` does, once the first ncu runs, so that nothing but
    ncu's own command line stands between `ncuh profile` and ncu.
    """

    def __init__(self, run_dir: Path, ncu: Path, spawner: Spawner, *,
                 metrics_csv: bool = False, export_jobs: int | None = None) -> None:
        self.run_dir = run_dir
        self.ncu = ncu
        self.spawner = spawner
        self.metrics_csv = metrics_csv
        # While ncu runs beside it, an export uses a few cores only: ncu and the runner need
        # theirs. The export after the last ncu may use them all (the worker's default).
        self.export_jobs = export_jobs or max(1, min(4, usable_cores() // 4))
        self.parts_dir = run_dir / PARTS_DIR
        self._parts: dict[str, _Part] = {}
        self._environment: _Timed | None = None
        self._git: _GitCommit | None = None
        self._lock = threading.Lock()  # with --gpus, every slot's ncu calls `start`

    def start(self) -> None:
        """Start the environment probe and the git lookup, once; ncu should be running."""
        with self._lock:
            if self._environment is not None:
                return
            self._environment = self._start(
                PROBE_MODULE, ["environment", str(self.ncu), "--no-cuda", "--list-gpus"],
                "environment")
            self._git = _GitCommit()

    def _start(self, module: str, args: Sequence[str], what: str) -> _Timed:
        started = time.monotonic()
        return _Timed(self.spawner(_child(module, args), _worker_environment()), started, what)

    def _part_path(self, index: int, label: str) -> Path:
        self.parts_dir.mkdir(exist_ok=True)
        return self.parts_dir / f"{index:04d}-{label}.csv"

    def prepare(self, index: int, label: str, report_name: str) -> None:
        """Start the export of target `index` now, while its ncu runs; it waits to be told."""
        if not self.metrics_csv:
            return
        path = self._part_path(index, label)
        go = path.with_suffix(".go")
        report = self.run_dir / report_name
        self._parts[label] = _Part(index, label, path, self._start(
            EXPORT_MODULE, [str(path), f"{label}={report}", "--after", str(go)],
            f"metrics {label}"), go)

    def entry_done(self, entry: _Entry, *, last: bool = False, index: int | None = None) -> None:
        """Let `entry`'s export go (or start it now), beside whatever ncu runs next.

        The last one may use every core (the worker's default); the others leave ncu its own.
        """
        if not self.metrics_csv:
            return
        jobs = [] if last else [str(self.export_jobs)]
        part = self._parts.get(entry.label)
        if part is not None and part.go is not None:
            part.timed.started = time.monotonic()
            atomic_write_text(part.go, " ".join(["go", *jobs]) if entry.status == "ok"
                              else "skip")
            return
        if entry.status != "ok":
            return
        index = len(self._parts) if index is None else index
        path = self._part_path(index, entry.label)
        report = self.run_dir / entry.report_name
        extra = ["--jobs", *jobs] if jobs else []
        self._parts[entry.label] = _Part(index, entry.label, path, self._start(
            EXPORT_MODULE, [str(path), f"{entry.label}={report}", *extra],
            f"metrics {entry.label}"))

    def finish(self, entries: Sequence[_Entry]) -> PostResult:
        """Wait for every child, join metrics.csv, and say what the environment was."""
        started = time.monotonic()
        self.start()  # no-op unless no ncu said it had started
        assert self._environment is not None and self._git is not None
        for part in self._parts.values():
            if part.go is not None and not part.go.exists():  # its ncu never finished
                atomic_write_text(part.go, "skip")
        if self.metrics_csv and not self._ok_parts_expected(entries):
            # No report: metrics.csv still says which columns it would have.
            path = self._part_path(len(entries), "empty")
            self._parts[""] = _Part(len(entries), "", path, self._start(
                EXPORT_MODULE, [str(path)], "metrics"))
        parts = sorted(self._parts.values(), key=lambda part: part.index)
        try:
            waited = _wait_all([self._environment, *(part.timed for part in parts)])
            commit = self._git.result()  # long done: it started beside ncu
        except BaseException:
            self.kill()
            raise
        (env_status, env_output, env_seconds), *exports = waited
        logs = self.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        atomic_write_text(logs / "environment.log", env_output)
        atomic_write_text(logs / "metrics.log", "".join(output for _, output, _ in exports))
        probed = _environment_result(env_status, env_output)
        gpus = [Gpu(**row) for row in probed.pop("gpus", None) or []]
        environment = _environment_for(probed, entries, gpus)
        environment["ncu_path"] = str(self.ncu)
        environment.setdefault("ncu_version", None)
        metrics = self._join(parts, exports) if self.metrics_csv else {
            "status": "skipped", "error": None, "rows": None}
        shutil.rmtree(self.parts_dir, ignore_errors=True)
        return PostResult(
            environment=environment, metrics=metrics, git_commit=commit,
            seconds=time.monotonic() - started, environment_seconds=env_seconds,
            metrics_seconds=sum(seconds for _, _, seconds in exports), gpus=gpus,
        )

    def _ok_parts_expected(self, entries: Sequence[_Entry]) -> bool:
        return any(entry.status == "ok" and entry.label in self._parts for entry in entries)

    def _join(self, parts: Sequence[_Part],
              exports: Sequence[tuple[int, str, float]]) -> dict[str, Any]:
        """metrics.csv from the parts, in target order; the first failure fails the table."""
        rows, written = 0, []
        for part, (status, output, _) in zip(parts, exports, strict=True):
            result = _worker_result(output)
            if isinstance(result, dict) and result.get("skipped") and status == 0:
                continue  # its ncu failed: no report to export
            if status != 0 or not isinstance(result, dict) or not part.path.is_file():
                what = f"metrics export of {part.label}" if part.label else "metrics export"
                (self.run_dir / METRICS).unlink(missing_ok=True)
                return {"status": "failed", "error": _failure_line(what, status, output)}
            rows += int(result.get("rows") or 0)
            written.append(part.path)
        with atomic_path(self.run_dir / METRICS) as tmp, tmp.open("wb") as joined:
            for number, path in enumerate(written):
                with path.open("rb") as stream:
                    header = stream.readline()
                    if number == 0:
                        joined.write(header)
                    shutil.copyfileobj(stream, joined)
        return {"status": "ok", "error": None, "rows": rows}

    def kill(self) -> None:
        for part in self._parts.values():
            if part.go is not None and not part.go.exists():
                # A thread-run export (a caller's own runner) cannot be killed: release it.
                atomic_write_text(part.go, "skip")
        started = [self._environment] if self._environment is not None else []
        for timed in [*started, *(part.timed for part in self._parts.values())]:
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
    post = PostProcessing(run_dir, ncu, spawner, metrics_csv=True)
    try:
        post.start()
        for number, entry in enumerate(entries):
            post.entry_done(entry, last=number == len(entries) - 1, index=number)
        # finish starts a child of its own (the export of no report) before it waits: an
        # interrupt there stops every child too, as `ncuh profile` stops them
        return post.finish(entries)
    except BaseException:
        post.kill()
        # a child whose start the interrupt cut short is not yet post's to kill, but is
        # registered as running from its first instruction on (`processes.StreamingCommand`)
        kill_running()
        raise
