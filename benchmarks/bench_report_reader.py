"""Time `ncuh export` and `ncuh report` as a user runs them (fresh processes, wall time).

    python benchmarks/bench_report_reader.py [REPORT] [--repeats 3]

Targets (issue 2, on a 2-core machine, 5-kernel `--set full` report of ~9 MB / ~175,000 rows):
export < 3 s, report < 2 s. Prints the median of the repeats, rows/s, and PASS/FAIL; exits 1
when a target is missed. Defaults to benchmarks/data/h200_five_variants_1024.ncu-rep.xz: five
SGEMM variants under `--set full` on an H200 (9.8 MB, ~292,000 rows), recorded with
`ncuh profile -- python benchmarks/launch_variants.py`, kept xz-compressed (0.45 MB) and
unpacked into a temporary folder before the timing. A REPORT ending in `.xz`
is unpacked the same way.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_REPORT = REPO / "benchmarks" / "data" / "h200_five_variants_1024.ncu-rep.xz"
TARGETS_S = {"export": 3.0, "report": 2.0}


def ncuh_command() -> list[str]:
    """The installed `ncuh` script beside this interpreter, else `python -m harness`."""
    script = Path(sys.executable).with_name("ncuh")
    if script.exists():
        return [str(script)]
    found = shutil.which("ncuh")
    return [found] if found else [sys.executable, "-m", "harness"]


def time_run(args: list[str], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        completed = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, check=False)
        samples.append(time.perf_counter() - start)
        if completed.returncode != 0:
            sys.exit(f"failed ({completed.returncode}): {' '.join(args)}\n{completed.stderr}")
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", type=Path, default=DEFAULT_REPORT)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    report = options.report.resolve()
    ncuh = ncuh_command()

    with tempfile.TemporaryDirectory() as tmp:
        if report.suffix == ".xz":
            unpacked = Path(tmp) / report.stem
            with lzma.open(report) as packed, unpacked.open("wb") as out:
                shutil.copyfileobj(packed, out)
            report = unpacked
        return run(report, ncuh, options.repeats, Path(tmp))


def run(report: Path, ncuh: list[str], repeats: int, tmp: Path) -> int:
    with tempfile.TemporaryDirectory(dir=tmp) as out_dir:
        output = Path(out_dir) / "metrics.csv"
        export_args = [*ncuh, "export", str(report), "-o", str(output)]
        export_samples = time_run(export_args, repeats)
        with output.open() as handle:
            rows = sum(1 for _ in handle) - 1
    report_samples = time_run([*ncuh, "report", str(report)], repeats)

    size_mb = report.stat().st_size / 1e6
    print(f"report: {report} ({size_mb:.1f} MB, {rows:,} exported rows)")
    print(f"command: {' '.join(ncuh)}; median of {repeats} fresh processes")
    failed = False
    for name, samples in (("export", export_samples), ("report", report_samples)):
        median = statistics.median(samples)
        ok = median < TARGETS_S[name]
        failed |= not ok
        extra = f", {rows / median:,.0f} rows/s" if name == "export" else ""
        print(f"ncuh {name}: median {median:.2f} s (runs {', '.join(f'{s:.2f}' for s in samples)})"
              f"{extra}; target < {TARGETS_S[name]:.0f} s: {'PASS' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
