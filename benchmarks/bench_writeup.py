"""How long `ncuh writeup` takes for a run of 20 kernels (target: under 10 s on 2 cores).

Builds a run directory whose 20 entries each hold a different one-kernel report of the zoo
(`tests/fixtures/zoo`, unpacked from its archive: no two entries share a report, so none is served
by the report cache from another's reading), so the writeup has 20 kernel pages, an index and
its plots; then times a first `ncuh writeup` of it as a user would run it (a fresh process
with an empty cache of its own: every report read, every plot drawn).

    python benchmarks/bench_writeup.py [--keep DIR] [--repeats 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "fixtures" / "zoo"
KERNELS = 20


def build_run(run: Path) -> None:
    """A run directory per harness.rundir.manifest's schema: 20 entries of one kernel each,
    each a different report."""
    run.mkdir(parents=True)
    entries = []
    with tarfile.open(ZOO / "packed.tar.xz") as tar:  # tests/pack_fixtures.py
        names = sorted(name for name in tar.getnames()
                       if name.startswith("zoo_") and name.endswith(".ncu-rep"))[:KERNELS]
        for name in names:
            tar.extract(name, run, filter="data")
    for name in names:
        label = name.removesuffix(".ncu-rep")
        entries.append({"label": label, "variant": None, "size": None, "params": {},
                        "report": f"{label}.ncu-rep", "status": "ok", "error": None})
    manifest = {"schema": "ncuh.run/1", "ncuh_version": "0.1.0", "git_commit": None,
                "environment": {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"},
                "ncu": {"set": "full"}, "started_at": "2026-01-01T00:00:00Z",
                "finished_at": "2026-01-01T00:01:00Z", "entries": entries}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the pages here and keep them")
    parser.add_argument("--repeats", type=int, default=1, help="first writeups to time")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    runs = [_timed(args.keep) for _ in range(args.repeats)]
    elapsed = statistics.median(seconds for seconds, _, _ in runs)
    _, pages, plots = runs[0]
    print(f"ncuh writeup: {pages} kernel pages + index (md and html, {plots} plots) in "
          f"{elapsed:.2f} s (median of {len(runs)})")
    if args.out is not None:
        args.out.write_text(json.dumps({
            "date": datetime.now(UTC).date().isoformat(),
            "machine": f"{os.cpu_count()}-core {platform.machine()} {platform.system()}",
            "command": " ".join(["python", "benchmarks/bench_writeup.py", *sys.argv[1:]]),
            "results": {"pages": pages, "plots": plots, "formats": "md and html",
                        "seconds": round(elapsed, 2),
                        "runs_s": [round(seconds, 2) for seconds, _, _ in runs]},
        }, indent=2) + "\n", encoding="utf-8")
    return 0 if elapsed < 10.0 else 1


def _timed(keep: Path | None) -> tuple[float, int, int]:
    """One first writeup: its seconds, kernel pages and plots."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        build_run(run)
        out = keep or Path(tmp) / "out"
        ncuh = Path(sys.executable).with_name("ncuh")
        command = [str(ncuh)] if ncuh.exists() else [sys.executable, "-m", "harness"]
        env = {**os.environ, "NCUH_CACHE_DIR": str(Path(tmp) / "cache")}
        env.pop("NCUH_REPORT_CACHE", None)
        start = time.perf_counter()
        subprocess.run([*command, "writeup", str(run), "--out", str(out)], check=True,
                       stdout=subprocess.DEVNULL, env=env)
        elapsed = time.perf_counter() - start
        pages = len(list(out.glob("*.html"))) - 1  # less the index
        plots = len(list(out.glob("plots/*.png")))
    return elapsed, pages, plots


if __name__ == "__main__":
    sys.exit(main())
