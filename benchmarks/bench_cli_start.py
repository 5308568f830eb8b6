"""How long `ncuh --help` and `ncuh report REPORT` take from a fresh process, before and after.

    python benchmarks/bench_cli_start.py [--baseline REF] [--repeats 15] [--report PATH]
        [--json FILE]

Each command runs as a user runs it (`python -m harness` in a process of its own, the
bytecode caches written by one uncounted run); `report` reads a report kept in the cache by
that run, so what is timed is ncuh's start and its printing, not ncu_report. `--baseline REF`
also times the ncuh of commit REF (its harness/, kernels/ and templates/ written out with
`git archive`), each repeat running the baseline and this checkout one after the other so
that the machine's drift hits both alike. Prints the median wall and CPU milliseconds of each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "reports" / "runs" / "sgemm-h200-256" / "naive_256.ncu-rep"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `argv`."""
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started, _children_cpu() - cpu


def checkout_of(ref: str, where: Path) -> Path:
    """The ncuh of commit `ref`, written out under `where`."""
    where.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "harness", "kernels",
                              "templates"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def environment(root: Path, cache: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "NCUH_REPORT_AND_PLOT_CACHE",
                          "NCUH_REPORT_CACHE")}
    env.update({"PYTHONPATH": str(root), "NCUH_CACHE_DIR": str(cache)})
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a commit to time beside this checkout")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--report", type=Path, default=REPORT)
    parser.add_argument("--json", type=Path, help="write the medians here")
    args = parser.parse_args()
    commands = {"--help": ["--help"], "report": ["report", str(args.report.resolve())]}
    with tempfile.TemporaryDirectory(prefix="ncuh-cli-start-") as tmp:
        work = Path(tmp)
        roots = {"this checkout": ROOT}
        if args.baseline:
            roots = {f"before ({args.baseline})": checkout_of(args.baseline, work / "baseline"),
                     **roots}
        envs = {name: environment(root, work / f"cache-{index}")
                for index, (name, root) in enumerate(roots.items())}
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for repeat in range(args.repeats + 1):  # the first writes bytecode and the cache
            for name, env in envs.items():
                for command, words in commands.items():
                    took = timed([sys.executable, "-m", "harness", *words], env, work)
                    if repeat:
                        samples.setdefault((name, command), []).append(took)
    medians = {f"{name}: ncuh {command}": {
        "wall_ms": round(statistics.median(w for w, _ in runs) * 1000, 1),
        "cpu_ms": round(statistics.median(c for _, c in runs) * 1000, 1)}
        for (name, command), runs in samples.items()}
    for label, figures in medians.items():
        print(f"{label:<40} wall {figures['wall_ms']:7.1f} ms   cpu {figures['cpu_ms']:7.1f} ms")
    if args.json is not None:
        args.json.write_text(json.dumps({"repeats": args.repeats, "medians": medians},
                                        indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
