"""What slows one GPU's replay passes while another GPU of the host is busy?

    python benchmarks/bench_pass_interference.py --out reports/profile/x.json \
        [--variant register_tiled] [--size 4096] [--repeats 4] [--chains]

Needs two GPUs. `ncuh profile --gpus all` on two GPUs takes longer than half of one GPU's chain
partly because each target's replay passes take longer (issue 13, sessions 7-11). This tells
apart what could cause it. ncuh's own ncu command line for `--variant` at `--size` runs on GPU 0,
its passes timed from ncu's own output (`==PROF== Profiling` to `==PROF== Disconnected`), in
turn, `--repeats` rounds:

* `alone`: nothing else on the host;
* `cpu_busy`: four processes spinning on the CPU, no GPU (the CPU cores and their clocks);
* `gpu_busy`: one CuPy process on GPU 1 launching kernels without pause, its CUDA context made
  before the profile starts (another GPU at work, but no new context);
* `new_contexts`: processes on GPU 1 starting CUDA, allocating and exiting, one after another
  (what each target's runner does when it starts);
* `second_ncu`: the same ncu command on GPU 1 at once (`--gpus all` on two GPUs, one target each).

With `--chains`: eight fast variants of the chain at `--size`, `--gpus 0` and `--gpus all` in
turn, with head starts on and off (`NCUH_HEAD_START`), their replay passes summed from the
manifests' phases: what a chain adds on top of the pair.

Writes the JSON to --out and a Markdown table beside it (same name, .md).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.profile.gpus import Gpu, list_gpus  # noqa: E402

CONFIGS = ("alone", "cpu_busy", "gpu_busy", "new_contexts", "second_ncu")
CPU_BUSY_PROCESSES = 4
# The fast variants of the bundled chain: their passes are the ones that grow (session 9).
FAST_VARIANTS = ("blocktile_1d", "register_tiled", "vectorized", "bank_conflict_free",
                 "warptiled", "double_buffered", "async_copy", "autotuned")
NEW_CONTEXT = "import cupy; cupy.zeros(1 << 20); cupy.cuda.runtime.deviceSynchronize()"
GPU_BUSY = """
import cupy, pathlib, sys
a = cupy.ones((4096, 4096), dtype=cupy.float32)
cupy.cuda.runtime.deviceSynchronize()
pathlib.Path(sys.argv[1]).touch()
while True:
    a @ a
    cupy.cuda.runtime.deviceSynchronize()
"""


def _env(gpu: Gpu) -> dict[str, str]:
    """Pinned to `gpu`, with a TMPDIR (so an ncu lock file) of its own, as `--gpus` does."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": gpu.uuid, "TMPDIR": tempfile.mkdtemp()}


def ncu_argv(variant: str, size: int, work: Path) -> list[str]:
    """ncuh's own first ncu command line for `variant` at `size` (from a real profile)."""
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "profile", "--variant", variant, "--size", str(size),
         "--out", str(work / "first")], capture_output=True, text=True, cwd=ROOT, check=False)
    if completed.returncode != 0:
        raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
    run_dir = Path(completed.stdout.strip().splitlines()[-1])
    return list(json.loads((run_dir / "manifest.json").read_text())["ncu"]["command_lines"][0])


def timed_ncu(argv: list[str], gpu: Gpu, report: Path) -> dict[str, float]:
    """Run ncu on `gpu`; its wall time, the time to its first pass, and its passes (s)."""
    command = list(argv)
    command[command.index("-o") + 1] = str(report)
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=_env(gpu), cwd=ROOT)
    assert process.stdout is not None
    seen, marks = b"", {}
    # ncu prints its progress dots without a newline: read bytes as they come, not lines.
    while chunk := os.read(process.stdout.fileno(), 4096):
        seen += chunk
        now = time.perf_counter() - started
        for key, marker in (("first_pass", b"==PROF== Profiling"),
                            ("passes_end", b"==PROF== Disconnected")):
            if key not in marks and marker in seen:
                marks[key] = now
    process.wait()
    if process.returncode != 0 or len(marks) != 2:
        raise SystemExit(f"ncu failed ({process.returncode}):\n{seen.decode()[-1500:]}")
    return {"wall_s": round(time.perf_counter() - started, 2),
            "to_first_pass_s": round(marks["first_pass"], 2),
            "passes_s": round(marks["passes_end"] - marks["first_pass"], 2)}


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


class Background:
    """What runs on the host beside the timed ncu, for one configuration."""

    def __init__(self, config: str, gpu: Gpu, work: Path, second: Callable[[], dict]) -> None:
        self.config, self.gpu, self.work, self.second = config, gpu, work, second
        self.stop = threading.Event()
        self.count = 0
        self.other: dict[str, float] = {}
        self._threads: list[threading.Thread] = []
        self._spinners: list[Any] = []  # multiprocessing.Process
        self._spinners_stop: Any = multiprocessing.Event()
        self._busy: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Background:
        if self.config == "cpu_busy":
            self._spinners = [multiprocessing.Process(target=_spin, args=(self._spinners_stop,))
                              for _ in range(CPU_BUSY_PROCESSES)]
            for process in self._spinners:
                process.start()
        elif self.config == "gpu_busy":
            ready = self.work / "gpu_busy.ready"
            ready.unlink(missing_ok=True)
            self._busy = subprocess.Popen([sys.executable, "-c", GPU_BUSY, str(ready)],
                                          env=_env(self.gpu))
            while not ready.exists():
                time.sleep(0.05)
        elif self.config == "new_contexts":
            self._threads = [threading.Thread(target=self._new_contexts)]
        elif self.config == "second_ncu":
            self._threads = [threading.Thread(target=lambda: self.other.update(self.second()))]
        for thread in self._threads:
            thread.start()
        if self.config == "new_contexts":
            time.sleep(1.0)  # the first context is being made when the profile starts
        return self

    def _new_contexts(self) -> None:
        env = _env(self.gpu)
        while not self.stop.is_set():
            subprocess.run([sys.executable, "-c", NEW_CONTEXT], env=env, capture_output=True,
                           check=False)
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join()
        self._spinners_stop.set()
        for process in self._spinners:
            process.join()
        if self._busy is not None:
            self._busy.kill()
            self._busy.wait()


def measure_passes(argv: list[str], gpus: list[Gpu], work: Path,
                   repeats: int) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {config: [] for config in CONFIGS}
    for round_ in range(repeats):
        for config in CONFIGS:
            def second(tag: str = f"{config}{round_}") -> dict[str, float]:
                return timed_ncu(argv, gpus[1], work / f"{tag}_second.ncu-rep")

            with Background(config, gpus[1], work, second) as background:
                sample: dict[str, Any] = timed_ncu(argv, gpus[0],
                                                   work / f"{config}{round_}.ncu-rep")
            if config == "new_contexts":
                sample["contexts_made"] = background.count
            if background.other:
                sample["second_ncu"] = background.other
            results[config].append(sample)
            print(round_, config, sample, flush=True)
    return results


def measure_chain(size: int, gpus_arg: str, head_start: str, work: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "harness", "profile", "--size", str(size), "--gpus", gpus_arg,
            "--out", str(work / "chains")]
    for variant in FAST_VARIANTS:
        argv += ["--variant", variant]
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False,
                               env={**os.environ, "NCUH_HEAD_START": head_start})
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
    run_dir = Path(completed.stdout.strip().splitlines()[-1])
    entries = json.loads((run_dir / "manifest.json").read_text())["entries"]
    phases = [entry.get("phases") or {} for entry in entries]
    return {"gpus": gpus_arg, "head_start": head_start, "wall_s": round(wall, 1),
            "passes_s": round(sum(p.get("passes_s", 0.0) for p in phases), 2),
            "to_first_pass_s": round(sum(p.get("to_first_pass_s", 0.0) for p in phases), 2),
            "each_passes_s": {e["label"]: p.get("passes_s") for e, p in zip(entries, phases,
                                                                           strict=True)}}


def markdown(result: dict[str, Any]) -> str:
    lines = ["# What slows one GPU's replay passes while another GPU is busy", "",
             f"GPUs: {', '.join(g['name'] for g in result['gpus'])}; ncu command of "
             f"{result['variant']} at {result['size']}; measured {result['created_at']}.", "",
             "| beside the profile on GPU 0 | passes (s), each round | median | vs alone | "
             "to the first pass, median (s) |", "|---|---|--:|--:|--:|"]
    passes = result["passes"]
    alone = statistics.median(s["passes_s"] for s in passes["alone"])
    for config, samples in passes.items():
        median = statistics.median(s["passes_s"] for s in samples)
        lines.append(f"| {config} | {[s['passes_s'] for s in samples]} | {median:.2f} | "
                     f"{median / alone:.3f} | "
                     f"{statistics.median(s['to_first_pass_s'] for s in samples):.2f} |")
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
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--chains", action="store_true",
                        help="also the fast variants' chain, one GPU and every GPU, head "
                             "starts on and off")
    args = parser.parse_args()
    gpus = list_gpus()
    if len(gpus) < 2:
        raise SystemExit(f"needs two GPUs; nvidia-smi lists {len(gpus)}")
    result: dict[str, Any] = {
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "gpus": [gpu.manifest() for gpu in gpus], "variant": args.variant, "size": args.size}
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result))

    with tempfile.TemporaryDirectory(prefix="ncuh-interference-") as tmp:
        work = Path(tmp)
        argv = ncu_argv(args.variant, args.size, work)
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
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
