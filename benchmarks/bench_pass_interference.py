"""What slows one GPU's replay passes while another GPU of the host is busy?

    python benchmarks/bench_pass_interference.py --out /tmp/ncuh-bench/pass_interference.json \
        [--variant register_tiled] [--size 4096] [--repeats 5] [--chains]

Needs two GPUs or more (the chains use every GPU of the host). `ncuh profile --gpus all` on two
GPUs takes longer than half of one GPU's chain partly because each target's replay passes take
longer (issue 13). This tells apart what could cause it. ncuh's own ncu command
line for `--variant` at `--size` runs on GPU 0 and is timed from ncu's own output: its passes
from `==PROF== Profiling` to the end of that line (`- N passes`), and its end from there to
`==PROF== Disconnected` (the runner's exit, CUDA's teardown). It runs alone and beside each of
these loads on GPU 1 or the host, `--repeats` rounds, the order turned by one each round:

* `alone`: nothing else on the host;
* `cpu_busy`: four processes spinning on the CPU, no GPU;
* `gpu_busy`: one CuPy process on GPU 1 running matrix products back to back, its CUDA context
  made before the profile starts (another GPU at work, but no new context);
* `new_processes`: Python processes starting, importing NumPy, touching 8 MiB and exiting, one
  after another (the host's process work without CUDA);
* `new_contexts`: the same with CuPy on GPU 1: each starts CUDA, allocates and exits (what each
  target's runner does when it starts);
* `second_ncu`: the same ncu command on GPU 1 at once (`--gpus all` on two GPUs, one target each).

With `--chains`: eight fast variants of the chain at `--size`, one run on GPU 0 first (so that
the runs after it plan with its times), then `--gpus 0` and `--gpus all`, head starts on and off
(`NCUH_HEAD_START`), their replay passes summed from the manifests' phases.

Every child is in a process group this script kills on its way out (an error, SIGTERM), and the
background loads also end by themselves when this process is gone.
Writes the JSON to --out and a Markdown table beside it (same name, .md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench_profile_gpus  # noqa: E402  (the first profile, the chain)

from harness.profile.gpus import Gpu, list_gpus, pinned_environment  # noqa: E402

CONFIGS = ("alone", "cpu_busy", "gpu_busy", "new_processes", "new_contexts", "second_ncu")
CPU_BUSY_PROCESSES = 4
GPU_BUSY_READY_S = 60.0
# The fast variants of the bundled chain: their passes are the ones that grow.
FAST_VARIANTS = ("blocktile_1d", "register_tiled", "vectorized", "bank_conflict_free",
                 "warptiled", "double_buffered", "async_copy", "autotuned")
_PASSES_END = re.compile(rb"- \d+ passes?")
_PASS_COUNT = re.compile(rb"- (\d+) passes?")
# The background loads. Each ends by itself once this script is gone (its parent changes).
_ORPHANED = "import os\nparent = os.getppid()\n"
SPIN = _ORPHANED + "while os.getppid() == parent:\n    sum(i * i for i in range(10_000))\n"
GPU_BUSY = _ORPHANED + """import cupy, pathlib, sys
a = cupy.ones((4096, 4096), dtype=cupy.float32)
cupy.cuda.runtime.deviceSynchronize()
pathlib.Path(sys.argv[1]).touch()
while os.getppid() == parent:
    a @ a
    cupy.cuda.runtime.deviceSynchronize()
"""
NEW_PROCESS = "import numpy; numpy.ones(1 << 21, dtype=numpy.float32).sum()"
NEW_CONTEXT = "import cupy; cupy.ones(1 << 21, dtype=cupy.float32).sum(); " \
              "cupy.cuda.runtime.deviceSynchronize()"

_CHILDREN: set[subprocess.Popen[bytes]] = set()
_CHILDREN_LOCK = threading.Lock()


def _start(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child in a process group of its own, killed with its group on the way out."""
    process = subprocess.Popen(argv, process_group=0, cwd=ROOT, **kwargs)
    with _CHILDREN_LOCK:
        _CHILDREN.add(process)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    with _CHILDREN_LOCK:
        _CHILDREN.discard(process)


def _stop_all() -> None:
    with _CHILDREN_LOCK:
        children = list(_CHILDREN)
    for process in children:
        _stop(process)


def _env(gpu: Gpu, work: Path) -> dict[str, str]:
    """Pinned to `gpu`, with its own ncu lock directory under `work`, as `--gpus` does."""
    return pinned_environment(dict(os.environ), gpu, base=work)


def timed_ncu(argv: list[str], gpu: Gpu, report: Path, work: Path) -> dict[str, float]:
    """Run ncu on `gpu`: its wall time, the time to its first pass, its passes, and its end
    (the runner's exit and CUDA's teardown), in seconds."""
    command = list(argv)
    command[command.index("-o") + 1] = str(report)
    started = time.perf_counter()
    process = _start(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     env=_env(gpu, work))
    assert process.stdout is not None
    seen, marks = b"", {}
    try:
        # ncu prints its progress dots without a newline: read bytes as they come, not lines.
        while chunk := os.read(process.stdout.fileno(), 4096):
            seen += chunk
            now = time.perf_counter() - started
            first = seen.find(b"==PROF== Profiling")
            if "first_pass" not in marks and first >= 0:
                marks["first_pass"] = now
            if "passes_end" not in marks and first >= 0 and _PASSES_END.search(seen, first):
                marks["passes_end"] = now
            if "disconnected" not in marks and b"==PROF== Disconnected" in seen:
                marks["disconnected"] = now
        process.wait()
    finally:
        _stop(process)
    count = _PASS_COUNT.search(seen)
    if process.returncode != 0 or len(marks) != 3 or count is None:
        raise SystemExit(f"ncu failed ({process.returncode}):\n"
                         f"{seen.decode(errors='replace')[-1500:]}")
    return {"wall_s": round(time.perf_counter() - started, 2),
            "to_first_pass_s": round(marks["first_pass"], 2),
            "passes_s": round(marks["passes_end"] - marks["first_pass"], 2),
            "end_s": round(marks["disconnected"] - marks["passes_end"], 2),
            "passes": int(count.group(1))}


class Background:
    """What runs beside the timed ncu for one configuration; what went wrong in it is raised
    on the way out, so that a broken load never passes for a sample."""

    def __init__(self, config: str, argv: list[str], gpu: Gpu, work: Path, tag: str) -> None:
        self.config, self.argv, self.gpu, self.work, self.tag = config, argv, gpu, work, tag
        self.stop = threading.Event()
        self.started = self.failed = 0  # children of the new_* loads
        self.second: dict[str, float] = {}
        self._thread: threading.Thread | None = None
        self._processes: list[subprocess.Popen[bytes]] = []
        self._error: BaseException | None = None

    def __enter__(self) -> Background:
        try:
            self._begin()
        except BaseException:
            self._end()
            raise
        return self

    def _begin(self) -> None:
        if self.config == "cpu_busy":
            self._processes = [_start([sys.executable, "-c", SPIN])
                               for _ in range(CPU_BUSY_PROCESSES)]
        elif self.config == "gpu_busy":
            ready = self.work / f"{self.tag}.ready"
            busy = _start([sys.executable, "-c", GPU_BUSY, str(ready)],
                          env=_env(self.gpu, self.work))
            self._processes = [busy]
            deadline = time.monotonic() + GPU_BUSY_READY_S
            while not ready.exists():
                if busy.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the GPU load did not start (exit {busy.poll()})")
                time.sleep(0.05)
        elif self.config in ("new_processes", "new_contexts"):
            code = NEW_CONTEXT if self.config == "new_contexts" else NEW_PROCESS
            self._thread = threading.Thread(target=self._guarded, args=(self._churn, code))
        elif self.config == "second_ncu":
            self._thread = threading.Thread(target=self._guarded, args=(self._second_ncu,))
        if self._thread is not None:
            self._thread.start()
        if self.config.startswith("new_"):
            time.sleep(1.0)  # the profile starts while the first of them is under way

    def _guarded(self, work: Any, *args: Any) -> None:
        try:
            work(*args)
        except BaseException as error:  # a thread's SystemExit would vanish without a word
            self._error = error

    def _churn(self, code: str) -> None:
        env = _env(self.gpu, self.work)
        while not self.stop.is_set():
            process = _start([sys.executable, "-c", code], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            process.wait()
            _stop(process)
            if process.returncode == 0:
                self.started += 1
            else:
                self.failed += 1

    def _second_ncu(self) -> None:
        self.second.update(timed_ncu(self.argv, self.gpu,
                                     self.work / f"{self.tag}_second.ncu-rep", self.work))

    def _end(self) -> None:
        self.stop.set()
        try:
            if self._thread is not None:
                self._thread.join()
        finally:
            for process in self._processes:
                _stop(process)

    def __exit__(self, *exc: object) -> None:
        self._end()
        if self._error is not None:
            raise self._error
        if self.config.startswith("new_") and (self.failed or not self.started):
            raise SystemExit(f"{self.config}: {self.failed} of the children failed, "
                             f"{self.started} ran")
        if self.config == "second_ncu" and not self.second:
            raise SystemExit("the second ncu gave no sample")


def measure_passes(argv: list[str], gpus: list[Gpu], work: Path,
                   repeats: int) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {config: [] for config in CONFIGS}
    for round_ in range(repeats):
        # The order turns by one each round: no load always follows the same one.
        shift = round_ % len(CONFIGS)
        for config in CONFIGS[shift:] + CONFIGS[:shift]:
            tag = f"{config}{round_}"
            with Background(config, argv, gpus[1], work, tag) as background:
                sample: dict[str, Any] = timed_ncu(argv, gpus[0], work / f"{tag}.ncu-rep",
                                                   work)
            if config.startswith("new_"):
                sample["children_run"] = background.started
            if background.second:
                sample["second_ncu"] = background.second
            results[config].append(sample)
            print(round_, config, sample, flush=True)
    return results


def measure_chain(size: int, gpus_arg: str, head_start: str, work: Path) -> dict[str, Any]:
    """The fast variants on `--gpus` with head starts `on` or `off`: wall time and phases."""
    run = bench_profile_gpus.measure_chain(size, "pages", gpus_arg, work, FAST_VARIANTS,
                                           env={**os.environ, "NCUH_HEAD_START": head_start})
    entries = run["entries"]
    if run["exit_status"] != 0 or any(not entry.get("phases") for entry in entries):
        raise SystemExit(f"ncuh profile failed or timed no phases:\n{run['stderr_tail']}")
    phases = [entry["phases"] for entry in entries]
    return {"gpus": gpus_arg, "head_start": head_start, "wall_s": run["wall_s"],
            "passes_s": round(sum(p["passes_s"] for p in phases), 2),
            "to_first_pass_s": round(sum(p["to_first_pass_s"] for p in phases), 2),
            "each_passes_s": {entry["label"]: p["passes_s"]
                              for entry, p in zip(entries, phases, strict=True)}}


def _median(samples: list[dict[str, Any]], key: str) -> float:
    return statistics.median(sample[key] for sample in samples)


def markdown(result: dict[str, Any]) -> str:
    passes = result["passes"]
    counts = sorted({sample["passes"] for samples in passes.values() for sample in samples})
    lines = ["# What slows one GPU's replay passes while another GPU is busy", "",
             f"GPUs: {', '.join(g['name'] for g in result['gpus'])}; ncuh's ncu command for "
             f"{result['variant']} at {result['size']} ({'/'.join(map(str, counts))} passes); "
             f"measured {result['created_at']}.", "",
             "| beside the profile on GPU 0 | passes (s), each round | median | vs alone | "
             "end, median (s) | to the first pass, median (s) |", "|---|---|--:|--:|--:|--:|"]
    alone = _median(passes["alone"], "passes_s")
    for config, samples in passes.items():
        median = _median(samples, "passes_s")
        lines.append(f"| {config} | {[s['passes_s'] for s in samples]} | {median:.3f} | "
                     f"{median / alone:.3f} | {_median(samples, 'end_s'):.2f} | "
                     f"{_median(samples, 'to_first_pass_s'):.2f} |")
    seconds = [s["second_ncu"]["passes_s"] for s in passes["second_ncu"] if "second_ncu" in s]
    if seconds:
        lines += ["", f"The second ncu's own passes (GPU 1): {seconds}, median "
                      f"{statistics.median(seconds):.3f} s."]
    chains = result.get("chains")
    if chains:
        lines += ["", f"The chain's eight fast variants at {result['size']}:", "",
                  "| --gpus | head starts | wall (s) | passes summed (s) | "
                  "to the first pass summed (s) |", "|---|---|--:|--:|--:|",
                  *[f"| {c['gpus']} | {c['head_start']} | {c['wall_s']} | {c['passes_s']} | "
                    f"{c['to_first_pass_s']} |" for c in chains]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chains", action="store_true",
                        help="also the fast variants' chain, one GPU and every GPU, head "
                             "starts on and off")
    args = parser.parse_args()
    gpus = list_gpus()
    if len(gpus) < 2:
        raise SystemExit(f"needs two GPUs; nvidia-smi lists {len(gpus)}")
    result: dict[str, Any] = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpus": [gpu.manifest() for gpu in gpus], "variant": args.variant, "size": args.size}
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally below runs
    try:
        with tempfile.TemporaryDirectory(prefix="ncuh-interference-") as tmp:
            work = Path(tmp)
            argv = list(bench_profile_gpus.first_profile(args.variant, args.size, "pages",
                                                         work / "first")["ncu"]["command_lines"][0])
            for code in (NEW_PROCESS, NEW_CONTEXT):  # CuPy's compile cached before any sample
                subprocess.run([sys.executable, "-c", code], env=_env(gpus[1], work), cwd=ROOT,
                               check=True)
            result["command"] = argv
            result["passes"] = measure_passes(argv, gpus, work, args.repeats)
            save()
            if args.chains:
                measure_chain(args.size, "0", "on", work)  # the times the next runs plan with
                result["chains"] = []
                for head_start in ("on", "off"):
                    for gpus_arg in ("0", "all"):
                        result["chains"].append(measure_chain(args.size, gpus_arg, head_start,
                                                              work))
                        save()
    finally:
        _stop_all()
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
