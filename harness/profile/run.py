"""`ncuh profile` as a library: run each variant (or a user program) under ncu into a run directory.

    request = ProfileRequest(variants=("register_tiled",), sizes=((4096, 4096, 4096),))
    outcome = run_profile(request)          # -> ProfileOutcome (run_dir, entries, exit_code)

Order of work, so that every cheap check fails before anything expensive starts:
1. `plan`: variants and sizes validated (unknown variant, size a variant cannot take: exit 2)
   and the exact ncu command lines built; `--dry-run` stops here, no GPU or ncu needed;
2. cheap checks in this process only: ncu located (`NcuNotFoundError` says how to get it)
   and, for bundled variants, CuPy installed (found, not imported: CUDA never loads here).
   Capture `auto` means NVTX; a CuPy without NVTX makes the runner fail with one line saying
   to pass `--capture kernel`. Nothing slow runs before ncu: a machine without a GPU is found
   out by the first ncu run itself (the runner exits 3, or ncu says so), which is fatal;
3. the run directory built under a temporary `.incomplete` name (`harness.atomic`): one ncu
   subprocess per entry, in its own process group so an interrupt kills ncu and the runner
   together; a failure of the machine (no counter permission, no GPU) stops everything with
   exit 2 and leaves no directory, a failure of one entry is recorded and the walk carries on
   (exit 1 at the end);
4. post-processing, two child processes (harness.profile.worker) started together and waited
   for together: the environment (driver, clocks, ncu version, without starting CUDA: the
   runner reported CuPy's view of the device and CUDA) and `metrics.csv` (tidy export of every
   report, a `label` column first). Children because CuPy and `ncu_report` are
   native code: a crash in either costs its own part, recorded in the manifest. Then
   `bench.json` with `--bench`, and `manifest.json` last (with phase timings); then the
   directory is renamed into place.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import __version__
from harness.atomic import atomic_directory, atomic_write_text
from harness.errors import NcuhError, NcuNotFoundError, NoGpuError
from harness.profile.ncu_command import (
    CaptureMode,
    KernelFilter,
    NcuSettings,
    ncu_args,
    runner_program,
    variant_filter,
)
from harness.profile.ncu_errors import classify
from harness.profile.processes import (
    Job,
    Runner,
    Spawner,
    in_threads,
    run_command,
    start_command,
    terminate_as_interrupt,
)
from harness.rundir import BENCH, MANIFEST, METRICS, RUN_SCHEMA

Shape = tuple[int, int, int]

NCU_HELP = (
    "ncu (Nsight Compute) was not found on PATH, in $NCU_HOME or under "
    "/opt/nvidia/nsight-compute: install it with the CUDA Toolkit or from "
    "https://developer.nvidia.com/nsight-compute, then put its directory on PATH"
)
PROGRAM_LABEL = "program"
NO_CUPY_HELP = "no GPU: CuPy is not installed (pip install 'ncuh[cuda13]' or 'ncuh[cuda12]')"
DEFAULT_SIZE: Shape = (4096, 4096, 4096)


@dataclass(frozen=True)
class ProfileRequest:
    """Everything `ncuh profile` was asked to do."""

    variants: tuple[str, ...] = ()
    sizes: tuple[Shape, ...] = (DEFAULT_SIZE,)
    settings: NcuSettings = field(default_factory=NcuSettings)
    out: Path = Path("runs")
    params: dict[str, Any] = field(default_factory=dict)
    warmup: int = 3
    bench: bool = False
    bench_sizes: tuple[Shape, ...] = ()  # sizes to time with bench; default: the profiled ones
    all_variants: bool = False
    capture: str = "auto"  # "auto" (NVTX when CuPy has it) | "nvtx" | "kernel"
    program: tuple[str, ...] = ()  # a user program: profiled instead of variants
    program_filter: KernelFilter = field(default_factory=KernelFilter)


@dataclass(frozen=True)
class Target:
    """One ncu invocation: a variant at one size, or the user's program."""

    label: str
    variant: str | None
    size: Shape | None
    params: dict[str, Any]
    program: tuple[str, ...]
    kernel_filter: KernelFilter

    @property
    def report_name(self) -> str:
        return f"{self.label}.ncu-rep"

    def argv(self, ncu: Path | str, settings: NcuSettings, run_dir: Path) -> list[str]:
        return ncu_args(ncu, settings, self.kernel_filter, run_dir / self.report_name,
                        self.program)


@dataclass
class EntryResult:
    """What happened to one target; becomes one entry of manifest.json."""

    target: Target
    status: str  # "ok" | "failed"
    error: str | None = None
    seconds: float = 0.0
    kernel_name: str | None = None
    rel_error: float | None = None
    params: dict[str, Any] | None = None  # as the runner compiled them (None: as planned)
    # The runner's CuPy view of the device and CUDA; empty for a user's program.
    environment: dict[str, Any] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        target = self.target
        return {
            "label": target.label,
            "variant": target.variant,
            "size": list(target.size) if target.size else None,
            "params": self.params if self.params is not None else target.params,
            "report": target.report_name if self.status == "ok" else None,
            "status": self.status,
            "error": self.error,
            "kernel_name": self.kernel_name,
            "rel_error": self.rel_error,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class ProfileOutcome:
    run_id: str
    run_dir: Path
    entries: list[EntryResult]
    metrics_error: str | None = None  # metrics.csv could not be made (the reports are there)

    @property
    def failures(self) -> list[EntryResult]:
        return [entry for entry in self.entries if entry.status != "ok"]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures or self.metrics_error else 0


@dataclass(frozen=True)
class Plan:
    request: ProfileRequest
    targets: tuple[Target, ...]
    capture: CaptureMode

    def command_lines(self, ncu: Path | str, run_dir: Path) -> list[list[str]]:
        return [t.argv(ncu, self.request.settings, run_dir) for t in self.targets]


# ---------------------------------------------------------------- planning (no GPU, no ncu)


def size_label(size: Shape) -> str:
    m, n, k = size
    return str(m) if m == n == k else f"{m}x{n}x{k}"


def parse_size(text: str) -> Shape:
    """'4096' -> (4096,)*3; '4096x2048x1024' -> (4096, 2048, 1024)."""
    from harness.errors import UnsupportedShapeError

    parts = text.strip().lower().split("x")
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise UnsupportedShapeError(
            f"bad size {text!r}: give N (square) or MxNxK with positive integers"
        )
    return int(parts[0]), int(parts[1]), int(parts[2])


def _chain_names() -> list[str]:
    from harness.variants import all_variants

    return [v.name for v in all_variants() if _runnable(v)]


def _runnable(variant: Any) -> bool:
    """Whether the runner can launch this variant's own kernel (cuBLAS has none to capture)."""
    return bool(getattr(variant, "source", None)) and bool(getattr(variant, "kernel_name", None))


def plan(request: ProfileRequest, *, capture: CaptureMode = "nvtx") -> Plan:
    """Validate the request and build every target; raises exit-2 errors before any work."""
    if request.program:
        if request.variants or request.all_variants:
            raise NcuhError("give either --variant/--all or a program after --, not both")
        target = Target(
            label=PROGRAM_LABEL, variant=None, size=None, params={},
            program=tuple(request.program), kernel_filter=request.program_filter,
        )
        return Plan(request, (target,), capture)

    from harness.variants import check_params, get_variant

    names = _chain_names() if request.all_variants else list(request.variants)
    if not names:
        raise NcuhError("nothing to profile: give --variant NAME, --all, or -- COMMAND ARGS")
    if not request.sizes:
        raise NcuhError("no size given")
    targets = []
    for name in dict.fromkeys(names):
        variant = get_variant(name)  # UnknownVariantError lists the names
        if not _runnable(variant):
            raise NcuhError(f"variant {variant.name} has no kernel of its own to profile")
        for size in request.sizes:
            # Bad parameters (NcuhError) or a shape it cannot take (UnsupportedShapeError): exit 2.
            params = check_params(variant, request.params or None, size)
            label = f"{variant.name}_{size_label(size)}"
            program = runner_program(
                variant.name, size, label=label, params=request.params,
                warmup=request.warmup, capture=capture,
            )
            targets.append(Target(
                label=label, variant=variant.name, size=size, params=params,
                program=tuple(program),
                kernel_filter=variant_filter(
                    label, capture=capture, kernel_name=variant.kernel_name,
                    warmup=request.warmup,
                ),
            ))
    return Plan(request, tuple(targets), capture)


def run_id_for(request: ProfileRequest, now: datetime | None = None) -> str:
    """`20261121-235959-register_tiled`: sortable time, then what was profiled."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    if request.program:
        what = _program_name(request.program)
    elif request.all_variants:
        what = "all"
    elif len(request.variants) == 1:
        what = request.variants[0]
    else:
        what = f"{request.variants[0]}-and-{len(request.variants) - 1}-more"
    return f"{stamp}-{what}"


_LAUNCHERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|sh|bash|env|torchrun|uv|uvx|time)$")


def _program_name(program: Sequence[str]) -> str:
    """`python my_kernel.py --n 4` -> `my_kernel`: the first word that is not a launcher."""
    words = [Path(word).name for word in program if word and not word.startswith("-")]
    chosen = next((w for w in words if not _LAUNCHERS.match(w)), words[0] if words else "")
    stem = chosen.rsplit(".", 1)[0] if chosen.endswith((".py", ".sh")) else chosen
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or PROGRAM_LABEL


# ---------------------------------------------------------------- running ncu


def check_program(program: Sequence[str]) -> None:
    """`NcuhError` (one line) unless the program after `--` exists and may be run: found
    before ncu starts, not as an ncu failure after it."""
    name = program[0]
    if os.sep in name or (os.altsep and os.altsep in name):
        path = Path(name)
        try:
            info = path.stat()
        except FileNotFoundError:
            raise NcuhError(f"program not found: {name}") from None
        except OSError as error:
            raise NcuhError(f"cannot run {name}: {error.strerror or error}") from None
        if stat.S_ISDIR(info.st_mode):
            raise NcuhError(f"cannot run {name}: it is a directory")
        if not stat.S_ISREG(info.st_mode) or not os.access(path, os.X_OK):
            raise NcuhError(f"cannot run {name}: not an executable file "
                            f"(chmod +x it, or name its interpreter: -- python {name})")
    elif shutil.which(name) is None:
        raise NcuhError(f"program not found: {name} (not on PATH)")


def find_ncu() -> Path:
    from harness.ncu_locate import ncu_executable

    ncu = ncu_executable()
    if ncu is None:
        raise NcuNotFoundError(NCU_HELP)
    return ncu


def runner_environment() -> dict[str, str]:
    """Our environment, with this ncuh's package root first on PYTHONPATH.

    `python -m harness.runner` under ncu must import the same `harness` as this process, also
    from a checkout that is not installed or when PYTHONPATH was given as a relative path.
    """
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    parts = [root, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root)]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def _result_line(output: str, prefix: str) -> Any:
    """The JSON after `prefix` on the last line that starts with it, or None."""
    for line in reversed(output.splitlines()):
        if line.startswith(prefix):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line[len(prefix):])
    return None


def _runner_result(output: str) -> dict[str, Any]:
    from harness.runner import RESULT_PREFIX

    return _result_line(output, RESULT_PREFIX) or {}


def profile_target(
    target: Target, ncu: Path, settings: NcuSettings, run_dir: Path,
    runner: Runner = run_command,
) -> EntryResult:
    """Run ncu for one target; raise the exit-2 error when the machine cannot profile."""
    report = run_dir / target.report_name
    argv = target.argv(ncu, settings, run_dir)
    started = time.monotonic()
    # Only our runner gets our package root on PYTHONPATH: a user's program keeps its own.
    env = runner_environment() if target.variant is not None else None
    returncode, output = runner(argv, env)
    seconds = time.monotonic() - started
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)
    atomic_write_text(logs / f"{target.label}.log", output)
    failure = classify(output, returncode, report_written=report.is_file())
    if failure is not None:
        if failure.fatal:
            raise failure.error()
        report.unlink(missing_ok=True)
        return EntryResult(target, "failed", failure.message, seconds)
    result = _runner_result(output)
    return EntryResult(
        target, "ok", None, seconds,
        kernel_name=result.get("kernel_name"), rel_error=result.get("rel_error"),
        params=result.get("params"), environment=result.get("environment") or {},
    )


# ---------------------------------------------------------------- the run directory


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
    return {**runner_environment(), "PYTHONFAULTHANDLER": "1"}


def _worker_result(output: str) -> dict[str, Any] | None:
    from harness.profile.worker import RESULT_PREFIX

    return _result_line(output, RESULT_PREFIX)


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


def cupy_installed() -> bool:
    """Whether CuPy can be imported, without importing it (that would load CUDA here)."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):  # a broken or half-imported package
        return False


@dataclass
class PostResult:
    """What the post-processing children produced, and how long they took."""

    environment: dict[str, Any]
    metrics: dict[str, Any]
    git_commit: str | None
    seconds: float  # both children, start to last finish
    environment_seconds: float = 0.0
    metrics_seconds: float = 0.0


def _wait_all(jobs: Sequence[Job], started: float) -> list[tuple[int, str, float]]:
    """Wait for every job at once: (status, output, seconds from `started` to its end) each.

    Each job is waited for on a thread of its own, so that each end is timed where it
    happens; an interrupt reaches this thread, and the caller then kills every job.
    """
    from concurrent.futures import ThreadPoolExecutor

    def wait(job: Job) -> tuple[int, str, float]:
        status, output = job.wait()
        return status, output, time.monotonic() - started

    pool = ThreadPoolExecutor(max_workers=len(jobs))
    try:
        futures = [pool.submit(wait, job) for job in jobs]
        return [future.result() for future in futures]
    finally:
        # Not waiting for the threads: after an interrupt they end once the caller has
        # killed their jobs.
        pool.shutdown(wait=False)


def _failure_line(what: str, returncode: int, output: str) -> str:
    last = _telling_line(output)
    return f"{what} {_status_text(returncode)}" + (f": {last}" if last else "")


def _environment_result(returncode: int, output: str) -> dict[str, Any]:
    result = _worker_result(output)
    if returncode == 0 and isinstance(result, dict):
        return result
    return {"probe_error": _failure_line("the environment probe", returncode, output)}


def _runner_cuda_fields(entries: Sequence[EntryResult]) -> dict[str, Any]:
    """The first runner's CuPy view of the device (every entry ran on the same one)."""
    return next((dict(e.environment) for e in entries if e.status == "ok" and e.environment), {})


def _merge_environment(probed: dict[str, Any], cuda: dict[str, Any]) -> dict[str, Any]:
    """The probe's fields, with the runner's CuPy fields first where it has them."""
    merged = {**probed, **{key: value for key, value in cuda.items() if value is not None}}
    if "cuda_runtime" in merged or "cuda_driver" in merged:
        merged["cuda"] = merged.get("cuda_runtime") or merged.get("cuda_driver")
    return merged


def _metrics_result(run_dir: Path, returncode: int, output: str) -> dict[str, Any]:
    result = _worker_result(output)
    if returncode == 0 and result is not None:
        return {"status": "ok", "error": None, "rows": result.get("rows")}
    (run_dir / METRICS).unlink(missing_ok=True)
    return {"status": "failed", "error": _failure_line("metrics export", returncode, output)}


def post_process(
    run_dir: Path, entries: Sequence[EntryResult], ncu: Path, spawner: Spawner,
) -> PostResult:
    """Environment and metrics.csv from two children at once; never fatal.

    Both are started before either is waited for, so the wall time is the slower of the two
    (the metrics export, under a second for a 4096 `--set full` report), not their sum. The
    environment child starts no CUDA: the runners reported CuPy's fields, so it only asks
    NVML or nvidia-smi (about the runners' device) and ncu. An interrupt stops both process
    groups before it propagates.
    """
    started = time.monotonic()
    pairs = [f"{e.target.label}={run_dir / e.target.report_name}" for e in entries
             if e.status == "ok"]
    cuda = _runner_cuda_fields(entries)
    probe = ["environment", str(ncu), "--no-cuda"]
    if cuda.get("pci_bus_id"):
        probe += ["--pci-bus-id", str(cuda["pci_bus_id"])]
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)
    jobs: list[Job] = []
    try:
        jobs.append(spawner(_worker(probe), _worker_environment()))
        jobs.append(spawner(_worker(["metrics", str(run_dir / METRICS), *pairs]),
                            _worker_environment()))
        commit = git_commit()  # a few milliseconds, while the children work
        (environment_status, environment_output, environment_seconds), (
            metrics_status, metrics_output, metrics_seconds) = _wait_all(jobs, started)
    except BaseException:
        for job in jobs:
            job.kill()
        raise
    atomic_write_text(logs / "environment.log", environment_output)
    atomic_write_text(logs / "metrics.log", metrics_output)
    environment = _merge_environment(
        _environment_result(environment_status, environment_output), cuda)
    environment["ncu_path"] = str(ncu)
    environment.setdefault("ncu_version", None)
    return PostResult(
        environment=environment,
        metrics=_metrics_result(run_dir, metrics_status, metrics_output),
        git_commit=commit,
        seconds=time.monotonic() - started,
        environment_seconds=environment_seconds,
        metrics_seconds=metrics_seconds,
    )


def _iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_manifest(
    plan_: Plan, entries: Sequence[EntryResult], *, environment: dict[str, Any], ncu: Path,
    run_dir: Path, started_at: str, finished_at: str, metrics: dict[str, Any] | None,
    bench: bool, commit: str | None, timings: dict[str, float] | None = None,
) -> dict[str, Any]:
    request = plan_.request
    return {
        "schema": RUN_SCHEMA,
        "ncuh_version": __version__,
        "git_commit": commit,
        "environment": environment,
        "ncu": {
            **request.settings.manifest(),
            "executable": str(ncu),
            "capture": plan_.capture if not request.program else "user",
            "command_lines": plan_.command_lines(ncu, run_dir),
        },
        "variants": list(dict.fromkeys(t.variant for t in plan_.targets if t.variant)),
        "sizes": [list(s) for s in dict.fromkeys(t.size for t in plan_.targets if t.size)],
        "params": dict(request.params),
        "warmup": request.warmup,
        "program": list(request.program) or None,
        "started_at": started_at,
        "finished_at": finished_at,
        "entries": [entry.manifest() for entry in entries],
        "metrics": metrics,
        "bench": BENCH if bench else None,
        "timings": timings,
    }


def _resolve_capture(request: ProfileRequest) -> CaptureMode:
    # `auto` is NVTX: CuPy is built with NVTX wherever it runs, and asking whether it is would
    # mean importing CuPy (a second or more) before ncu. Where it is not, the runner says to
    # pass --capture kernel.
    if request.capture in ("nvtx", "kernel"):
        return request.capture  # type: ignore[return-value]
    return "nvtx"


def _unique_run_dir(out: Path, run_id: str) -> tuple[str, Path]:
    candidate, n = run_id, 1
    while (out / candidate).exists() or any(out.glob(f".{candidate}.*.incomplete")):
        n += 1
        candidate = f"{run_id}-{n}"
    return candidate, out / candidate


def run_profile(
    request: ProfileRequest,
    *,
    on_start: Callable[[Target, int, int], None] | None = None,
    on_done: Callable[[EntryResult, int, int], None] | None = None,
    runner: Runner | None = None,
    spawner: Spawner | None = None,
) -> ProfileOutcome:
    """Profile every target of `request` into a new run directory under `request.out`.

    `runner` runs one argv and returns (status, output); `spawner` starts one and returns a
    `Job`. Tests replace them; the defaults are `run_command` and `start_command` (looked up
    at call time so that they can be patched). Given only a `runner`, the post-processing
    jobs go through it, on threads.
    """
    clock = time.monotonic()
    if runner is None:
        runner, spawner = run_command, spawner or start_command
    else:
        spawner = spawner or in_threads(runner)
    plan(request)  # validate names and sizes before touching ncu
    if request.program:
        check_program(request.program)
    ncu = find_ncu()
    if not request.program and not cupy_installed():
        raise NoGpuError(NO_CUPY_HELP)
    plan_ = plan(request, capture=_resolve_capture(request))
    out = request.out.resolve()
    run_id, final_dir = _unique_run_dir(out, run_id_for(request))
    started_at = _iso_now()

    entries: list[EntryResult] = []
    with terminate_as_interrupt(), atomic_directory(final_dir) as tmp:
        total = len(plan_.targets)
        for index, target in enumerate(plan_.targets):
            if on_start:
                on_start(target, index, total)
            entry = profile_target(target, ncu, request.settings, tmp, runner)
            entries.append(entry)
            if on_done:
                on_done(entry, index, total)
        post = post_process(tmp, entries, ncu, spawner)
        if request.bench and not request.program:
            # After the children, not beside them: their CPU load would disturb the timings.
            _write_bench(tmp, plan_, request.bench_sizes)
        timings = {
            "ncu_s": round(sum(entry.seconds for entry in entries), 3),
            "post_s": round(post.seconds, 3),
            "post_environment_s": round(post.environment_seconds, 3),
            "post_metrics_s": round(post.metrics_seconds, 3),
            "total_s": round(time.monotonic() - clock, 3),
        }
        manifest = build_manifest(
            plan_, entries, environment=post.environment, ncu=ncu, run_dir=final_dir,
            started_at=started_at, finished_at=_iso_now(), metrics=post.metrics,
            bench=request.bench and not request.program, commit=post.git_commit,
            timings=timings,
        )
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=2, default=str) + "\n")
    return ProfileOutcome(run_id=run_id, run_dir=final_dir, entries=entries,
                          metrics_error=post.metrics.get("error"))


def _write_bench(run_dir: Path, plan_: Plan, bench_sizes: tuple[Shape, ...] = ()) -> None:
    from harness.bench import run_bench

    variants = list(dict.fromkeys(t.variant for t in plan_.targets if t.variant))
    # The seed pages' "Benchmark Results" list several sizes while one size is profiled.
    sizes = list(bench_sizes) or list(dict.fromkeys(t.size for t in plan_.targets if t.size))
    run_bench(variants, sizes, references=True).save(run_dir / BENCH)
