"""How much time `ncuh profile` adds to ncu, and how long the whole chain takes (GPU machine).

    python benchmarks/bench_profile_overhead.py --out reports/profile_overhead.json \
        [--variant register_tiled] [--size 4096] [--repeats 2] [--all-size 4096] [--skip-all]

1. Overhead: wall time of `ncuh profile --variant X --size S` against the same ncu command
   line typed by hand (the first command line of the run's manifest, run directly on the
   runner). After one uncounted warm-up, runs alternate (hand, ncuh, ...) so drift hits both;
   medians compared.
   Target: ratio <= 1.15.
   Where ncuh's extra time goes, from each run's manifest `timings`: ncu (inside ncuh),
   post-processing (environment and metrics.csv children), and the rest of the wall time
   (Python start, planning, manifest, rename). Then each post-processing child alone on the
   last run's report: the metrics export with 1, 2, 4 and 8 processes, and the environment
   probe with and without CUDA (CuPy import and CUDA start, what it did before).
2. Chain: wall time of `ncuh profile --all --size 4096`. Target: < 300 s.

Writes the JSON result to --out and a Markdown table beside it (same name, .md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OVERHEAD_TARGET = 1.15
CHAIN_TARGET_S = 300.0


def _timed(argv: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                               check=False)
    return time.perf_counter() - started, completed


def _ncuh(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "harness", "profile", *args]


def _run_dir(completed: subprocess.CompletedProcess[str]) -> Path:
    path = Path(completed.stdout.strip().splitlines()[-1])
    return path if path.is_absolute() else ROOT / path


def measure_overhead(variant: str, size: int, section_set: str, repeats: int,
                     work: Path) -> dict[str, Any]:
    ncuh_argv = _ncuh(["--variant", variant, "--size", str(size), "--set", section_set,
                       "--out", str(work / "overhead")])
    # An uncounted first run fills CuPy's kernel cache and gives the command line to type.
    _, completed = _timed(ncuh_argv, timeout=600)
    if completed.returncode != 0:
        raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
    manifest = json.loads((_run_dir(completed) / "manifest.json").read_text())
    hand_argv = list(manifest["ncu"]["command_lines"][0])
    ncuh_s: list[float] = []
    hand_s: list[float] = []
    phases: list[dict[str, float]] = []
    for index in range(repeats):
        argv = list(hand_argv)
        argv[argv.index("-o") + 1] = str(work / f"hand_{index}.ncu-rep")
        seconds, completed = _timed(argv, timeout=600)
        if completed.returncode != 0:
            raise SystemExit(f"ncu by hand failed:\n{completed.stdout}{completed.stderr}")
        hand_s.append(seconds)
        seconds, completed = _timed(ncuh_argv, timeout=600)
        if completed.returncode != 0:
            raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
        ncuh_s.append(seconds)
        run_dir = _run_dir(completed)
        timings = json.loads((run_dir / "manifest.json").read_text())["timings"]
        phases.append({
            "wall_s": round(seconds, 3), "ncu_s": timings["ncu_s"], "post_s": timings["post_s"],
            "post_environment_s": timings.get("post_environment_s"),
            "post_metrics_s": timings.get("post_metrics_s"),
            "rest_s": round(seconds - timings["ncu_s"] - timings["post_s"], 3)})
    ratio = statistics.median(ncuh_s) / statistics.median(hand_s)
    return {
        "variant": variant, "size": size, "set": section_set, "repeats": repeats,
        "ncuh_s": [round(s, 3) for s in ncuh_s], "hand_s": [round(s, 3) for s in hand_s],
        "ncuh_median_s": round(statistics.median(ncuh_s), 3),
        "hand_median_s": round(statistics.median(hand_s), 3),
        "ratio": round(ratio, 3), "target": OVERHEAD_TARGET, "met": ratio <= OVERHEAD_TARGET,
        "hand_command": hand_argv,
        "phases_median_s": {key: round(statistics.median(p[key] for p in phases), 3)
                            for key in ("wall_s", "ncu_s", "post_s", "rest_s")},
        "phases_s": phases,
        "post_steps_s": measure_post_steps(run_dir, manifest["ncu"]["executable"], work),
    }


def measure_post_steps(run_dir: Path, ncu: str, work: Path) -> dict[str, float]:
    """Each post-processing child alone on one run's report, best of two."""
    worker = [sys.executable, "-m", "harness.profile.worker"]
    reports = [f"{path.stem}={path}" for path in sorted(run_dir.glob("*.ncu-rep"))]
    commands = {
        f"metrics_jobs_{jobs}": [*worker, "metrics", str(work / f"m{jobs}.csv"), *reports,
                                 "--jobs", str(jobs)]
        for jobs in (1, 2, 4, 8)
    }
    commands["environment_no_cuda"] = [*worker, "environment", ncu, "--no-cuda"]
    commands["environment_with_cuda"] = [*worker, "environment", ncu]
    commands["python_start"] = [sys.executable, "-c", "pass"]
    steps: dict[str, float] = {}
    for name, argv in commands.items():
        times = []
        for _ in range(2):
            seconds, completed = _timed(argv, timeout=120)
            if completed.returncode != 0:
                raise SystemExit(f"{name} failed:\n{completed.stdout}{completed.stderr}")
            times.append(seconds)
        steps[name] = round(min(times), 3)
    return steps


def measure_chain(size: int, section_set: str, work: Path) -> dict[str, Any]:
    seconds, completed = _timed(
        _ncuh(["--all", "--size", str(size), "--set", section_set,
               "--out", str(work / "chain")]), timeout=1800)
    entries: list[dict[str, Any]] = []
    if completed.returncode in (0, 1):
        manifest = json.loads((_run_dir(completed) / "manifest.json").read_text())
        entries = [{"label": e["label"], "status": e["status"], "seconds": e["seconds"],
                    "error": e["error"]} for e in manifest["entries"]]
    return {
        "size": size, "set": section_set, "wall_s": round(seconds, 1),
        "exit_status": completed.returncode, "entries": entries,
        "stderr_tail": completed.stderr[-2000:] if completed.returncode not in (0, 1) else "",
        "target_s": CHAIN_TARGET_S, "met": completed.returncode == 0 and seconds < CHAIN_TARGET_S,
    }


def environment() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from harness.gpu_env import collect_environment
    from harness.ncu_locate import ncu_executable

    env = collect_environment()
    ncu = ncu_executable()
    if ncu is not None:
        text = subprocess.run([str(ncu), "--version"], capture_output=True, text=True,
                              check=False).stdout
        from harness.profile.ncu_command import parse_version

        env["ncu_version"] = parse_version(text)
        env["ncu_path"] = str(ncu)
    return env


def markdown(result: dict[str, Any]) -> str:
    env = result["environment"]
    lines = [
        "# `ncuh profile` overhead and chain time",
        "",
        f"{env.get('gpu')} (CC {env.get('compute_capability')}), driver {env.get('driver')}, "
        f"CUDA {env.get('cuda')}, ncu {env.get('ncu_version')}; measured {result['created_at']}.",
        "",
    ]
    over = result.get("overhead")
    if over:
        lines += [
            f"## Overhead: `ncuh profile --variant {over['variant']} --size {over['size']} "
            f"--set {over['set']}` vs the same ncu command by hand",
            "",
            "| | runs (s) | median (s) |",
            "|---|---|---|",
            f"| ncuh profile | {', '.join(map(str, over['ncuh_s']))} | {over['ncuh_median_s']} |",
            f"| ncu by hand | {', '.join(map(str, over['hand_s']))} | {over['hand_median_s']} |",
            "",
            f"Ratio {over['ratio']} (target <= {over['target']}): "
            f"{'met' if over['met'] else 'NOT met'}.",
            "",
        ]
        phases = over.get("phases_median_s")
        if phases:
            lines += [
                "Where ncuh's wall time goes (medians over its runs, from the manifests' "
                "`timings`): " + ", ".join(f"{key.removesuffix('_s')} {value} s"
                                          for key, value in phases.items()) + ".",
                "",
                "| post-processing step, alone | seconds (best of 2) |",
                "|---|---|",
                *[f"| {name} | {value} |" for name, value in over["post_steps_s"].items()],
                "",
            ]
    chain = result.get("chain")
    if chain:
        lines += [
            f"## Chain: `ncuh profile --all --size {chain['size']} --set {chain['set']}`",
            "",
            f"Wall time {chain['wall_s']} s (target < {chain['target_s']} s): "
            f"{'met' if chain['met'] else 'NOT met'}; exit status {chain['exit_status']}.",
            "",
            "| entry | status | seconds | error |",
            "|---|---|---|---|",
        ]
        lines += [f"| {e['label']} | {e['status']} | {e['seconds']} | {e['error'] or ''} |"
                  for e in chain["entries"]]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="result JSON path")
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--set", dest="section_set", default="full")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--all-size", type=int, default=4096)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-all", action="store_true")
    args = parser.parse_args()

    result: dict[str, Any] = {
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": environment(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result))

    with tempfile.TemporaryDirectory(prefix="ncuh-bench-") as tmp:
        work = Path(tmp)
        if not args.skip_overhead:
            result["overhead"] = measure_overhead(args.variant, args.size, args.section_set,
                                                  args.repeats, work)
            save()
            print(f"overhead ratio {result['overhead']['ratio']}", flush=True)
        if not args.skip_all:
            result["chain"] = measure_chain(args.all_size, args.section_set, work)
            save()
            print(f"chain {result['chain']['wall_s']} s", flush=True)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
