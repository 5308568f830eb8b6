"""What `ncuh profile` costs around ncu, without a GPU: before ncu starts and after it ends.

    python benchmarks/bench_profile_startup.py [--variant register_tiled] [--size 2048]
        [--repeats 7] [--ncu-seconds 1.0] [--json FILE]

A stand-in `ncu` (a bash script put first on PATH) notes the wall-clock time it was started
and the time it is about to exit, sleeps `--ncu-seconds` (so that the post-processing children,
which run beside ncu, have finished their start as they would beside a real ncu), copies a
recorded report (tests/fixtures/h100_pages_register_tiled_1024.ncu-rep) to its `-o` path, and
prints the runner's result line. `ncuh profile --variant V --size S` then runs for real on it:
the bundled project, planning, the environment probe and the metrics export of that report
(NVIDIA's `ncu_report` must be importable, e.g. `pip install ncu-report`). An empty `cupy`
package on PYTHONPATH stands in for CuPy, which ncuh looks for (never imports) before ncu.

Per run, from the wall clock of this process and the stand-in's notes:

* start -> ncu spawned: from just before this process starts `python -m harness profile` to the
  stand-in's first line (Python's start, imports, planning, everything up to the spawn);
* ncu exit -> ncuh end: from the stand-in's last line to `ncuh profile` having exited; of that,
  `post_s` (manifest timings: the last report's metrics export and the join, not ncuh's own
  work) is shown apart, and the rest is ncuh's own work after ncu (manifest, rename, exit);
  the same again with `--no-metrics-csv`, where all of it is ncuh's own.

Also: a bare `python -c pass` (the floor no Python CLI goes below), the wall time of the
same command with `--dry-run`, and the import time of the run (`-X importtime`, top-level
imports summed). Medians over `--repeats` runs after one uncounted run that writes the
bytecode caches (PYTHONDONTWRITEBYTECODE is dropped for the children: an installed ncuh has
its bytecode). Prints a small table; `--json` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "tests" / "fixtures" / "h100_pages_register_tiled_1024.ncu-rep"

# The stand-in ncu. Bash, not Python: its own start must not count as ncuh's.
STAND_IN = r"""#!/bin/bash
start=$EPOCHREALTIME
if [ "$1" = --version ]; then
  echo "Version 2025.3.1.0 (build 36398880) (public-release)"
  exit 0
fi
report=
label=program
while [ $# -gt 0 ]; do
  case $1 in
    -o) report=$2; shift ;;
    --label) label=$2; shift ;;
  esac
  shift
done
echo "==PROF== Connected to process $$"
sleep "$NCUH_BENCH_NCU_SECONDS"
cp "$NCUH_BENCH_REPORT" "$report"
echo "==PROF== Profiling \"k_$label\" - 0: 0%....50%....100% - 30 passes"
echo "$NCUH_BENCH_RESULT"
echo "==PROF== Disconnected from process $$"
echo "$start $EPOCHREALTIME" >> "$NCUH_BENCH_LOG"
"""
# What the runner under ncu prints last (harness.gpu.runner), on an H100.
RUNNER_RESULT = "ncuh-runner-result: " + json.dumps({
    "kernel_name": "sgemm_register_tiled", "rel_error": 1e-7,
    "environment": {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                    "pci_bus_id": "0000:1B:00.0", "cuda_runtime": "13.0"}})


def _setup(work: Path, ncu_seconds: float) -> dict[str, str]:
    """The stand-in ncu and an empty `cupy` in `work`; the environment to run ncuh in."""
    bin_dir, stub_dir = work / "bin", work / "stubs" / "cupy"
    bin_dir.mkdir()
    stub_dir.mkdir(parents=True)
    (stub_dir / "__init__.py").write_text('"""Found by find_spec, never imported."""\n')
    ncu = bin_dir / "ncu"
    ncu.write_text(STAND_IN)
    ncu.chmod(0o755)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "NCU_HOME", "NCUH_PROJECT")}
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        # This checkout's harness, whatever is installed.
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(work / "stubs")]),
        "NCUH_BENCH_NCU_SECONDS": str(ncu_seconds),
        "NCUH_BENCH_REPORT": str(REPORT),
        "NCUH_BENCH_LOG": str(work / "ncu.log"),
        "NCUH_BENCH_RESULT": RUNNER_RESULT,
    })
    return env


def _profile_argv(variant: str, size: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "harness", "profile", "--variant", variant, "--size", size,
            "--out", str(out), *extra]


def one_run(argv: list[str], env: dict[str, str], work: Path) -> dict[str, float]:
    """One `ncuh profile`: (start -> ncu spawned, ncu exit -> end, post_s) in seconds."""
    log = work / "ncu.log"
    log.unlink(missing_ok=True)
    launched = time.time()
    completed = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True,
                               check=False)
    ended = time.time()
    if completed.returncode != 0:
        raise SystemExit(f"ncuh profile failed ({completed.returncode}):\n"
                         f"{completed.stdout}{completed.stderr}")
    (line,) = log.read_text().splitlines()  # one target: one ncu run
    ncu_start, ncu_end = (float(word) for word in line.split())
    run_dir = Path(completed.stdout.strip().splitlines()[-1])
    run_dir = run_dir if run_dir.is_absolute() else work / run_dir
    manifest = json.loads((run_dir / "manifest.json").read_text())
    if manifest["metrics"]["status"] not in ("ok", "skipped"):
        raise SystemExit(f"metrics.csv was not made: {manifest['metrics']}")
    return {"to_spawn": ncu_start - launched, "after_ncu": ended - ncu_end,
            "post": manifest["timings"]["post_s"]}


def wall(argv: list[str], env: dict[str, str], work: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=work, capture_output=True, check=True)
    return time.perf_counter() - started


_IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")


def import_seconds(argv: list[str], env: dict[str, str], work: Path) -> float:
    """The run's top-level imports, summed (`-X importtime`, this process only)."""
    completed = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=work,
                               capture_output=True, text=True, check=True)
    total_us = 0
    for line in completed.stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and not match.group(2).startswith(" "):
            total_us += int(match.group(1))
    return total_us / 1e6


def measure(variant: str, size: str, repeats: int, ncu_seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ncuh-startup-") as tmp:
        work = Path(tmp)
        env = _setup(work, ncu_seconds)
        argv = _profile_argv(variant, size, work / "runs")
        one_run(argv, env, work)  # uncounted: writes the bytecode caches
        runs = [one_run(argv, env, work) for _ in range(repeats)]
        # No metrics.csv: all that is left after ncu is ncuh's own work.
        lean = [one_run([*argv, "--no-metrics-csv"], env, work) for _ in range(repeats)]
        floor = [wall([sys.executable, "-c", "pass"], env, work) for _ in range(repeats)]
        dry = [wall(_profile_argv(variant, size, work / "runs", "--dry-run"), env, work)
               for _ in range(repeats)]
        imports = [import_seconds(argv, env, work) for _ in range(repeats)]

    def median_ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    return {
        "variant": variant, "size": size, "repeats": repeats, "ncu_seconds": ncu_seconds,
        "python": sys.version.split()[0],
        "median_ms": {
            "start_to_ncu_spawn": median_ms([r["to_spawn"] for r in runs]),
            "ncu_exit_to_end": median_ms([r["after_ncu"] for r in runs]),
            "post_s_of_that": median_ms([r["post"] for r in runs]),
            "ncuh_own_after_ncu": median_ms([r["after_ncu"] - r["post"] for r in runs]),
            "ncu_exit_to_end_no_metrics_csv": median_ms([r["after_ncu"] for r in lean]),
            "python_c_pass": median_ms(floor),
            "dry_run_wall": median_ms(dry),
            "imports_in_run": median_ms(imports),
        },
        "runs_ms": [{key: round(value * 1000, 1) for key, value in run.items()} for run in runs],
    }


LABELS = {
    "start_to_ncu_spawn": "start -> ncu spawned",
    "ncu_exit_to_end": "ncu exit -> ncuh end",
    "post_s_of_that": "  of which post_s (last export, join)",
    "ncuh_own_after_ncu": "  of which ncuh's own",
    "ncu_exit_to_end_no_metrics_csv": "ncu exit -> ncuh end, --no-metrics-csv",
    "python_c_pass": "python -c pass (floor)",
    "dry_run_wall": "--dry-run, wall",
    "imports_in_run": "imports (top-level, summed)",
}


def table(result: dict[str, Any]) -> str:
    width = max(len(label) for label in LABELS.values())
    lines = [f"ncuh profile --variant {result['variant']} --size {result['size']}, stand-in ncu "
             f"of {result['ncu_seconds']} s, median of {result['repeats']} runs, "
             f"Python {result['python']}", f"{'':<{width}}  {'ms':>8}"]
    lines += [f"{label:<{width}}  {result['median_ms'][key]:>8.1f}"
              for key, label in LABELS.items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", default="2048")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ncu-seconds", type=float, default=1.0,
                        help="how long the stand-in ncu runs")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    result = measure(args.variant, args.size, args.repeats, args.ncu_seconds)
    print(table(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
