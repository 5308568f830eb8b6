"""How fast is the history store at a team's scale, on SQLite and on PostgreSQL?

    python benchmarks/bench_history.py --out docs/results/history_scale.json \
        [--runs 1000] [--kernels 12] [--postgresql auto|postgresql://...|none]

One real run directory of `--kernels` entries (each a copy of the committed H100
register_tiled report, with 30 bench samples) is read once; then `--runs` runs are added to
each store, one transaction each, at commits of their own, with fresh bench samples (one
kernel steps up 5% two thirds of the way). Then the trend pages are built from the store and
written (`ncuh history show`). Measured: each `add`'s seconds (median, p95, max), the whole
`show`, the store's bytes per run, and once, `ncuh history add` of the real run directory as a
user runs it (a new process: imports, reading the reports, the write).

`--postgresql auto` starts a throwaway server with Debian's initdb and pg_ctl (as the tests
do); `none` measures SQLite alone. Writes the JSON to --out and nothing else (its scratch goes
to a temporary directory that is removed).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from history_support import REGISTER_TILED, new_database, postgres_server  # noqa: E402

from harness.history import build_trends, open_store, write_trends  # noqa: E402
from harness.history.record import RunRecord, read_run  # noqa: E402

SIZE = [1024, 1024, 1024]
ENV = {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "driver": "580.159.04",
       "ncu_version": "2025.3.1"}


def make_run(root: Path, kernels: int) -> Path:
    """A run directory of `kernels` entries, each the register_tiled report, with samples."""
    run = root / "run"
    run.mkdir(parents=True)
    rng = np.random.default_rng(0)
    entries, results = [], []
    for k in range(kernels):
        variant = f"k{k:02d}"
        label = f"{variant}_1024"
        shutil.copyfile(REGISTER_TILED, run / f"{label}.ncu-rep")
        entries.append({"label": label, "variant": variant, "size": SIZE, "params": {},
                        "report": f"{label}.ncu-rep", "status": "ok", "error": None})
        drawn = [float(x) for x in 0.3 * (1 + 0.01 * rng.standard_normal(30))]
        results.append({"variant": variant, "size": SIZE, "params": {}, "samples_ms": drawn,
                        "median_ms": float(np.median(drawn)), "status": "ok", "error": None})
    manifest = {"schema": "ncuh.run/1", "ncuh_version": "0.1.0", "git_commit": None,
                "environment": ENV, "ncu": {"set": "full"}, "project": {"name": "bench"},
                "started_at": "2026-11-21T00:00:00Z", "finished_at": "2026-11-21T00:01:00Z",
                "entries": entries}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (run / "bench.json").write_text(json.dumps({
        "schema": "ncuh.bench/1", "ncuh_version": "0.1.0", "created_at": "2026-11-21T00:00:00Z",
        "environment": ENV, "settings": {"repeats": 30, "warmup": 5, "l2_flush": True,
                                         "alpha": 1.0, "beta": 0.0},
        "results": results}), encoding="utf-8")
    return run


def nth_run(record: RunRecord, n: int, runs: int, rng: np.random.Generator) -> RunRecord:
    """Run n: fresh samples for every kernel; kernel 3 is 5% slower from two thirds on."""
    kernels = []
    for k, kernel in enumerate(record.kernels):
        level = 0.3 * (1.05 if k == 3 and n >= 2 * runs // 3 else 1.0)
        level *= 1 + 0.003 * rng.standard_normal()
        drawn = tuple(float(x) for x in level * (1 + 0.01 * rng.standard_normal(30)))
        kernels.append(replace(kernel, samples_ms=drawn))
    return replace(record, kernels=tuple(kernels), fingerprint=f"{n:064x}")


def store_bytes(url: str, path: Path | None) -> int:
    if path is not None:
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                           "WHERE c.relname LIKE 'ncuh_%' AND c.relkind = 'r'").fetchone()
    return int(row[0])


def measure(url: str, sqlite_path: Path | None, record: RunRecord, runs: int,
            scratch: Path) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    store = open_store(url, create=True)
    seconds = []
    for n in range(runs):
        one = nth_run(record, n, runs, rng)
        start = time.perf_counter()
        outcome = store.add(one, hashlib.sha1(str(n).encode()).hexdigest(), "main")
        seconds.append(time.perf_counter() - start)
        assert outcome.status == "added"
    store.close()
    if sqlite_path is not None:  # the write-ahead log folded into the file: its real size
        with contextlib.closing(sqlite3.connect(sqlite_path)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = store_bytes(url, sqlite_path)
    start = time.perf_counter()
    store = open_store(url)
    stored = store.runs()
    store.close()
    loaded = time.perf_counter() - start
    trends = build_trends(stored)
    out = scratch / f"pages-{len(os.listdir(scratch))}"
    write_trends(trends, out)
    show = time.perf_counter() - start
    ordered = sorted(seconds)
    return {
        "runs": runs, "kernels_per_run": len(record.kernels),
        "add_median_s": round(statistics.median(seconds), 4),
        "add_p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 4),
        "add_max_s": round(ordered[-1], 4), "add_total_s": round(sum(seconds), 2),
        "show_s": round(show, 2), "show_load_s": round(loaded, 2),
        "series": len(trends.views),
        "steps": [f"{v.series.key.name}: {s.commit_range} {s.change_pct:+.1f}%"
                  for v in trends.views for s in v.steps],
        "store_bytes": size, "bytes_per_run": round(size / runs),
    }


def cli_add(run: Path, url: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", "history", "add", str(run), "--commit",
                    "cli" + "0" * 37, "--store", url], check=True, capture_output=True,
                   cwd=ROOT)
    return round(time.perf_counter() - start, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--kernels", type=int, default=12)
    parser.add_argument("--postgresql", default="auto",
                        help="auto (start a throwaway server), a postgresql:// URL, or none")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ncuh-bench-history-"))
    try:
        run = make_run(scratch, args.kernels)
        start = time.perf_counter()
        record = read_run(run)
        read_s = time.perf_counter() - start
        results: dict[str, Any] = {}
        sqlite_path = scratch / "history.sqlite"
        results["sqlite"] = measure(str(sqlite_path), sqlite_path, record, args.runs, scratch)
        results["sqlite"]["cli_add_s"] = cli_add(run, str(sqlite_path))
        if args.postgresql == "auto":
            with postgres_server() as server:
                if server is None:
                    results["postgresql"] = {"skipped": "initdb/pg_ctl could not start"}
                else:
                    url = new_database(server)
                    results["postgresql"] = measure(url, None, record, args.runs, scratch)
                    results["postgresql"]["cli_add_s"] = cli_add(run, url)
        elif args.postgresql != "none":
            results["postgresql"] = measure(args.postgresql, None, record, args.runs, scratch)
            results["postgresql"]["cli_add_s"] = cli_add(run, args.postgresql)
        import sqlalchemy

        data = {
            "schema": "ncuh.bench_history/1",
            "date": datetime.now(UTC).date().isoformat(),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "python": platform.python_version(),
                        "sqlalchemy": sqlalchemy.__version__},
            "command": " ".join(["python", "benchmarks/bench_history.py", *sys.argv[1:]]),
            "read_run_s": round(read_s, 2),
            "targets": {"add_s": 1.0, "show_s": 30.0, "bytes_per_run": 100_000},
            "results": results,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(data, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
