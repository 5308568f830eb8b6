"""What `ncuh profile` costs around ncu, without a GPU: before ncu starts and after it ends.

    python benchmarks/bench_profile_startup.py [--baseline REF] [--variant register_tiled]
        [--size 2048] [--repeats 7] [--ncu-seconds 1.0] [--json FILE]

A stand-in `ncu` (a bash script put first on PATH) notes the wall-clock time it was started
and the time it is about to exit, sleeps `--ncu-seconds` (so that the post-processing children,
which run beside ncu, have finished their start as they would beside a real ncu), copies a
recorded report (tests/fixtures/h100_pages_register_tiled_1024.ncu-rep, from that folder's
archive) to its `-o` path, and prints the runner's result line. `ncuh profile --variant V
--size S` then runs for real on it:
the bundled project, planning, the environment probe and the metrics export of that report
(NVIDIA's `ncu_report` must be importable, e.g. `pip install ncu-report`). An empty `cupy`
package on PYTHONPATH stands in for CuPy, which ncuh looks for (never imports) before ncu.

Per run, from the wall clock of this process and the stand-in's notes:

* start -> ncu spawned: from just before this process starts `python -m harness profile` to the
  stand-in's first line (Python's start, imports, planning, everything up to the spawn);
* ncu exit -> ncuh end: from the stand-in's last line to `ncuh profile` having exited; of that,
  `post_s` (manifest timings: the last report's metrics export and the join, not ncuh's own
  work) is shown apart, and the rest is ncuh's own work after ncu (manifest, rename, exit);
  measured with `--metrics-csv`, then again without it (the default), where all of it is
  ncuh's own.

Also: a bare `python -c pass` (the floor no Python CLI goes below), the wall time of the
same command with `--dry-run`, and the import time of the run (`-X importtime`, top-level
imports summed, in runs of their own: importtime slows imports down) before ncu's spawn (up
to the progress line printed just before it) and after it. Medians over `--repeats` runs
after one uncounted run that writes the bytecode caches (PYTHONDONTWRITEBYTECODE is dropped
for the children: an installed ncuh has its bytecode).

`--baseline REF` also measures the ncuh of commit REF (checked out for the run with
`git worktree add --detach`, removed after), each repeat running the baseline and this checkout
one after the other so that the machine's drift hits both alike: a before/after table.
Prints a small table; `--json` also writes the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "tests" / "fixtures" / "packed.tar.xz"  # tests/pack_fixtures.py
REPORT = "h100_pages_register_tiled_1024.ncu-rep"

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

LABELS = {
    "start_to_ncu_spawn": "start -> ncu spawned",
    "ncu_exit_to_end": "ncu exit -> ncuh end, --metrics-csv",
    "post_s_of_that": "  of which post_s (last export, join)",
    "ncuh_own_after_ncu": "  of which ncuh's own",
    "ncu_exit_to_end_no_metrics_csv": "ncu exit -> ncuh end (default)",
    "python_c_pass": "python -c pass (floor)",
    "dry_run_wall": "--dry-run, wall",
    "imports_before_ncu": "imports before ncu spawned",
    "imports_after_ncu": "imports after that",
}


def _stand_ins(work: Path) -> Path:
    """The stand-in ncu and an empty `cupy` in `work`; returns the folder for PYTHONPATH."""
    bin_dir, stubs = work / "bin", work / "stubs"
    bin_dir.mkdir()
    (stubs / "cupy").mkdir(parents=True)
    (stubs / "cupy" / "__init__.py").write_text('"""Found by find_spec, never imported."""\n')
    ncu = bin_dir / "ncu"
    ncu.write_text(STAND_IN)
    ncu.chmod(0o755)
    with tarfile.open(ARCHIVE) as tar, tar.extractfile(REPORT) as report:  # type: ignore[union-attr]
        (work / "report.ncu-rep").write_bytes(report.read())
    return stubs


def _environment(root: Path, work: Path, ncu_seconds: float) -> dict[str, str]:
    """The environment to run the ncuh at `root` in, with the stand-ins of `work`."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "NCU_HOME", "NCUH_PROJECT")}
    env.update({
        "PATH": f"{work / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        # That checkout's harness, whatever is installed.
        "PYTHONPATH": os.pathsep.join([str(root), str(work / "stubs")]),
        "NCUH_BENCH_NCU_SECONDS": str(ncu_seconds),
        "NCUH_BENCH_REPORT": str(work / "report.ncu-rep"),  # written by `_stand_ins`
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
# What `ncuh profile` prints on stderr (not a terminal) just before it starts ncu.
_PROFILING_LINE = re.compile(r"^\[\d+/\d+\] \S+: profiling$")


def import_seconds(argv: list[str], env: dict[str, str], work: Path) -> tuple[float, float]:
    """The run's top-level imports summed (`-X importtime`, this process only), before the
    progress line that comes just before ncu's spawn and after it."""
    completed = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=work,
                               capture_output=True, text=True, check=True)
    totals_us, after = [0, 0], 0
    for line in completed.stderr.splitlines():
        if _PROFILING_LINE.match(line):
            after = 1
        match = _IMPORT_LINE.match(line)
        if match and not match.group(2).startswith(" "):
            totals_us[after] += int(match.group(1))
    if not after:
        raise SystemExit(f"no progress line from {argv}:\n{completed.stderr[-2000:]}")
    return totals_us[0] / 1e6, totals_us[1] / 1e6


class Checkout:
    """One ncuh to measure, and its samples (seconds) by row."""

    def __init__(self, name: str, root: Path, work: Path, ncu_seconds: float,
                 out: Path) -> None:
        self.name = name
        self.env = _environment(root, work, ncu_seconds)
        self.out = out  # its run directories
        self.samples: dict[str, list[float]] = {key: [] for key in LABELS}

    def sample(self, variant: str, size: str, work: Path) -> None:
        argv = _profile_argv(variant, size, self.out)
        run = one_run([*argv, "--metrics-csv"], self.env, work)
        # No metrics.csv (the default): all that is left after ncu is ncuh's own work.
        lean = one_run(argv, self.env, work)
        add = self.samples
        add["start_to_ncu_spawn"].append(run["to_spawn"])
        add["ncu_exit_to_end"].append(run["after_ncu"])
        add["post_s_of_that"].append(run["post"])
        add["ncuh_own_after_ncu"].append(run["after_ncu"] - run["post"])
        add["ncu_exit_to_end_no_metrics_csv"].append(lean["after_ncu"])
        add["python_c_pass"].append(wall([sys.executable, "-c", "pass"], self.env, work))
        add["dry_run_wall"].append(wall([*argv, "--dry-run"], self.env, work))
        before, after = import_seconds(argv, self.env, work)
        add["imports_before_ncu"].append(before)
        add["imports_after_ncu"].append(after)

    def medians_ms(self) -> dict[str, float]:
        return {key: round(statistics.median(values) * 1000, 1)
                for key, values in self.samples.items()}


@contextlib.contextmanager
def baseline_checkout(ref: str, work: Path) -> Iterator[Path]:
    """Commit `ref` of this repository checked out (detached) under `work`, removed after."""
    path = work / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--quiet", "--detach", str(path),
                    ref], check=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                       check=False)


def measure(variant: str, size: str, repeats: int, ncu_seconds: float,
            baseline: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ncuh-startup-") as tmp, \
            contextlib.ExitStack() as stack:
        work = Path(tmp)
        _stand_ins(work)
        checkouts = []
        if baseline is not None:
            root = stack.enter_context(baseline_checkout(baseline, work))
            checkouts.append(Checkout(f"before ({baseline})", root, work, ncu_seconds,
                                      work / "runs-baseline"))
        checkouts.append(Checkout("this checkout", ROOT, work, ncu_seconds, work / "runs"))
        for checkout in checkouts:  # uncounted: writes the bytecode caches
            one_run(_profile_argv(variant, size, checkout.out), checkout.env, work)
        for _ in range(repeats):
            for checkout in checkouts:
                checkout.sample(variant, size, work)
        return {
            "variant": variant, "size": size, "repeats": repeats, "ncu_seconds": ncu_seconds,
            "python": sys.version.split()[0],
            "median_ms": {checkout.name: checkout.medians_ms() for checkout in checkouts},
        }


def table(result: dict[str, Any]) -> str:
    columns = list(result["median_ms"])
    width = max(len(label) for label in LABELS.values())
    widths = [max(10, len(name)) for name in columns]
    lines = [f"ncuh profile --variant {result['variant']} --size {result['size']}, stand-in ncu "
             f"of {result['ncu_seconds']} s, median ms of {result['repeats']} runs, "
             f"Python {result['python']}",
             f"{'':<{width}}  " + "  ".join(f"{name:>{w}}" for name, w in zip(columns, widths,
                                                                                strict=True))]
    for key, label in LABELS.items():
        cells = [f"{result['median_ms'][name][key]:>{w}.1f}"
                 for name, w in zip(columns, widths, strict=True)]
        lines.append(f"{label:<{width}}  " + "  ".join(cells))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=None, metavar="REF",
                        help="also measure this commit's ncuh (a before/after table)")
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", default="2048")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ncu-seconds", type=float, default=1.0,
                        help="how long the stand-in ncu runs")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    result = measure(args.variant, args.size, args.repeats, args.ncu_seconds, args.baseline)
    print(table(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
