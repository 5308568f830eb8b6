"""How fast ncuh reads reports: its reading commands against their targets, as a user runs them.

    python benchmarks/bench_report_reader.py [--run-a A] [--run-b B] [--full FULL]
        [--many MANY] [--repeats 3] [--only NAME,...] [--out results.json]

Each figure is the median wall time of `--repeats` fresh `ncuh` processes, measured twice:
cold (an empty report cache: every report is read from its file) and warm (the same command
after two earlier ones: what they kept under the cache is read back; an export's table is
kept from its second asking on). Targets (2 cores):

    ncuh report REPORT            <= 0.5 s   (the largest report of run A)
    ncuh export FULL -o CSV       <= 1.0 s   (the 8-kernel `--set full` report)
    ncuh diff A B                 <= 1.5 s   (two 11-variant runs)
    ncuh writeup A                <= 2.5 s   (11 pages + index, md and html, plots)
    ncuh writeup FULL             <= 3.0 s   (the 8-kernel `--set full` report: 8 pages)
    ncuh writeup MANY             <= 5.0 s   (a 20-kernel `--set full` report of a PyTorch
                                              program: 20 pages)
    ncuh history add A            <  1.0 s

A, B, FULL and MANY default to the recorded data committed xz-packed under benchmarks/data/
(H100: `h100_sgemm_4096_a.tar.xz`, `..._b.tar.xz`: one run directory each;
`h100_full_8_kernels_1024.tar.xz`: full/<timestamp>/ with one report; H200:
`h200_full_20_kernels_pytorch.ncu-rep.xz`: one report of examples/transformer_step.py's
training step), unpacked into a temporary folder. A
run directory or a report (or an .xz-packed report, such as
benchmarks/data/h200_five_variants_1024.ncu-rep.xz) may be named directly instead; MANY may
also be a folder of reports, all written up at once. Prints one line per figure (PASS when
both the cold and the warm median meet the target) with the load average before and after,
and, with --out, writes the JSON; exits 1 when a figure misses its target.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
DEFAULTS = {
    "run_a": DATA / "h100_sgemm_4096_a.tar.xz",
    "run_b": DATA / "h100_sgemm_4096_b.tar.xz",
    "full": DATA / "h100_full_8_kernels_1024.tar.xz",
    "many": DATA / "h200_full_20_kernels_pytorch.ncu-rep.xz",
}
TARGETS_S = {"report": 0.5, "export": 1.0, "diff": 1.5, "writeup": 2.5, "writeup_full": 3.0,
             "writeup_many": 5.0, "history_add": 1.0}
COMMIT = "b" * 40


def ncuh_command() -> list[str]:
    """The `ncuh` script beside this interpreter, else `python -m harness`."""
    script = Path(sys.executable).with_name("ncuh")
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness"]


def unpacked(source: Path, into: Path) -> Path:
    """`source` itself, or where its .tar.xz (or its .xz report) was unpacked."""
    if source.suffix == ".xz" and not source.name.endswith(".tar.xz"):
        target = into / source.stem
        with lzma.open(source) as packed, target.open("wb") as out:
            shutil.copyfileobj(packed, out)
        return target
    if not source.name.endswith(".tar.xz"):
        return source
    target = into / source.name.removesuffix(".tar.xz")
    with tarfile.open(source, "r:xz") as archive:
        archive.extractall(target, filter="data")
    return target


def find_run(folder: Path) -> Path:
    """The run directory at or under `folder` (the one holding manifest.json)."""
    found = sorted(p.parent for p in folder.rglob("manifest.json"))
    if (folder / "manifest.json").is_file():
        return folder
    if not found:
        sys.exit(f"bench_report_reader: no run directory (manifest.json) under {folder}")
    return found[0]


def reports_of(source: Path, into: Path) -> list[Path]:
    """The report `source` (unpacked where it is packed), or every report in the folder
    `source` (.xz-packed ones unpacked into `into`), to be written up together."""
    if source.is_file():
        return [find_report(unpacked(source, into))]
    reports = [*sorted(source.rglob("*.ncu-rep")),
               *(unpacked(path, into) for path in sorted(source.rglob("*.ncu-rep.xz")))]
    if not reports:
        sys.exit(f"bench_report_reader: no .ncu-rep under {source}")
    return reports


def find_report(source: Path, largest: bool = True) -> Path:
    """`source` when it is a report, else the largest report under it."""
    if source.is_file():
        return source
    reports = sorted(source.rglob("*.ncu-rep"), key=lambda p: p.stat().st_size,
                     reverse=largest)
    if not reports:
        sys.exit(f"bench_report_reader: no .ncu-rep under {source}")
    return reports[0]


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # diff exits 1 for a regression it found
        sys.exit(f"bench_report_reader: failed ({done.returncode}): {' '.join(args)}\n"
                 f"{done.stderr}")
    return elapsed


def measure(name: str, make_args: Any, repeats: int, scratch: Path) -> dict[str, Any]:
    """Cold and warm medians of one command; `make_args(n)` gives the n-th command line."""
    base = {**os.environ}
    for switch in ("NCUH_REPORT_AND_PLOT_CACHE", "NCUH_REPORT_CACHE"):  # the cache on
        base.pop(switch, None)
    cold = []
    for n in range(repeats):
        env = {**base, "NCUH_CACHE_DIR": str(scratch / f"{name}-cold-{n}")}
        cold.append(timed(make_args(f"cold{n}"), env))
    env = {**base, "NCUH_CACHE_DIR": str(scratch / f"{name}-warm")}
    # twice: an export's table is kept from its second asking on
    for n in range(2):
        timed(make_args(f"warmup{n}"), env)
    warm = [timed(make_args(f"warm{n}"), env) for n in range(repeats)]
    target = TARGETS_S[name]
    result = {"target_s": target, "cold_s": round(statistics.median(cold), 3),
              "warm_s": round(statistics.median(warm), 3),
              "cold_runs_s": [round(s, 3) for s in cold],
              "warm_runs_s": [round(s, 3) for s in warm]}
    result["cold_pass"] = result["cold_s"] <= target
    result["warm_pass"] = result["warm_s"] <= target
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-a", type=Path, default=DEFAULTS["run_a"],
                        help="run directory A, or a .tar.xz holding it")
    parser.add_argument("--run-b", type=Path, default=DEFAULTS["run_b"],
                        help="run directory B (diffed against A), or a .tar.xz holding it")
    parser.add_argument("--full", type=Path, default=DEFAULTS["full"],
                        help="the 8-kernel --set full report, a folder or .tar.xz holding it")
    parser.add_argument("--many", type=Path, default=DEFAULTS["many"],
                        help="the 20-kernel --set full report (or a folder of reports, "
                             "written up together), or its .xz")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=",".join(TARGETS_S),
                        help="the figures to measure, comma-separated (default: all)")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    only = args.only.split(",")
    if unknown := sorted(set(only) - set(TARGETS_S)):
        sys.exit(f"bench_report_reader: unknown figures {unknown} (known: {list(TARGETS_S)})")
    for source in (args.run_a, args.run_b, args.full, args.many):
        if not source.exists():
            sys.exit(f"bench_report_reader: {source} does not exist")
    ncuh = ncuh_command()
    scratch = Path(tempfile.mkdtemp(prefix="ncuh-bench-reader-"))
    try:
        run_a = find_run(unpacked(args.run_a.resolve(), scratch))
        run_b = find_run(unpacked(args.run_b.resolve(), scratch))
        full = find_report(unpacked(args.full.resolve(), scratch))
        many = [str(path) for path in reports_of(args.many.resolve(), scratch)]
        report = find_report(run_a)
        out = scratch / "out"
        commands = {
            "report": lambda tag: [*ncuh, "report", str(report)],
            "export": lambda tag: [*ncuh, "export", str(full), "-o", str(out / f"{tag}.csv")],
            "diff": lambda tag: [*ncuh, "diff", str(run_a), str(run_b)],
            "writeup": lambda tag: [*ncuh, "writeup", str(run_a), "--out", str(out / tag)],
            "writeup_full": lambda tag: [*ncuh, "writeup", str(full), "--out",
                                         str(out / f"full-{tag}")],
            "writeup_many": lambda tag: [*ncuh, "writeup", *many, "--out",
                                         str(out / f"many-{tag}")],
            "history_add": lambda tag: [*ncuh, "history", "add", str(run_a), "--commit",
                                        COMMIT, "--store", str(out / f"{tag}.sqlite")],
        }
        load_before = os.getloadavg()
        results = {name: measure(name, make, args.repeats, scratch)
                   for name, make in commands.items() if name in only}
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"ncuh: {' '.join(ncuh)}; median of {args.repeats} fresh processes; "
          f"{os.cpu_count()} cores; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after")
    for name, r in results.items():
        verdict = "PASS" if r["warm_pass"] and r["cold_pass"] else "FAIL"
        print(f"{name:<13} cold {r['cold_s']:6.2f} s  warm {r['warm_s']:6.2f} s  "
              f"target <= {r['target_s']:.1f} s: {verdict}")
    if args.out is not None:
        data = {
            "schema": "ncuh.bench_report_reader/2",
            "date": datetime.now(UTC).date().isoformat(),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "python": platform.python_version(),
                        # 1, 5 and 15 minutes, before the first figure and after the last
                        "load_average": {"before": [round(x, 2) for x in load_before],
                                         "after": [round(x, 2) for x in load_after]}},
            "command": " ".join(["python", "benchmarks/bench_report_reader.py", *sys.argv[1:]]),
            "inputs": {"run_a": str(args.run_a), "run_b": str(args.run_b),
                       "full": str(args.full), "many": str(args.many),
                       "many_reports": len(many), "report": report.name},
            "results": results,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["warm_pass"] and r["cold_pass"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
