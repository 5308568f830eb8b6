"""Re-tune the SGEMM chain's `autotuned` on this GPU after its kernel source changed.

Each sweep is `SIZE=LIMIT`, optionally followed by `@KEY=V1,V2` clauses that keep only those
values of a tunable axis: a seeded sample of at most LIMIT valid configurations whose first is
this GPU's shipped winner for SIZE (from the earlier source, where it is still valid), so a
re-tune can only find something faster than it. Several sweeps of one size keep their fastest.
The winners are written to --out as tuning entries in the shipped format
(kernels/sgemm/tuning.json), --candidates every timed configuration; sweeps that would start
past --time-budget seconds are skipped and named.

    python benchmarks/sgemm_retune.py --out OUT/entries.json --time-budget 300 \\
        333x777x4099=200@SERIAL=1@SPLIT=8,10 1024x4096x512=150 4096=24
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from harness.gpu.env import current_compute_capability, current_gpu_name
from harness.gpu.sweep import autotune, enumerate_configs
from harness.gpu.tuning import source_fingerprint
from harness.project import load_project

PROJECT = Path(__file__).resolve().parents[1] / "kernels" / "sgemm"


def parse_sweep(text: str) -> tuple[str, int, dict[str, list[int]]]:
    """SIZE=LIMIT[@KEY=V1,V2...] as (size, limit, {key: values})."""
    head, *axes = text.split("@")
    size, _, limit = head.partition("=")
    kept = {}
    for axis in axes:
        key, _, values = axis.partition("=")
        kept[key] = [int(v) for v in values.split(",")]
    return size, int(limit), kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", help="SIZE=LIMIT[@KEY=V1,V2...]")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--time-budget", type=float, default=300.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--candidates", type=Path, help="also write every timed configuration")
    args = parser.parse_args()

    project = load_project(PROJECT)
    variant = project.variant("autotuned")
    gpu = current_gpu_name()
    shipped = json.loads((PROJECT / "tuning.json").read_text())["entries"]
    old = {e["size"]: e for e in shipped if e["gpu"] == gpu and e["variant"] == variant.name}
    best: dict[str, dict] = {}
    timed: list[dict] = []
    start = time.perf_counter()
    print(f"{'size':15} {'sweep':14} {'timed':>5} {'best ms':>9} {'seed ms':>9}  best params")
    for text in args.sweeps:
        size_text, limit, kept = parse_sweep(text)
        size = project.parse_size(size_text)
        if time.perf_counter() - start > args.time_budget:
            print(f"{size_text:15} {text:14} skipped: past {args.time_budget:.0f} s")
            continue
        seed = {**variant.params, **old.get(str(size), {}).get("params", {})}
        tunable = {**variant.tunable, **kept}
        swept = dataclasses.replace(variant, params=seed, tunable=tunable)
        result = autotune(project, swept, size, repeats=args.repeats, warmup=1, limit=limit,
                          save=False)
        seed_ms = next((c.median_ms for c in result.candidates
                        if c.status == "ok" and c.params == seed), None)
        timed += [{"size": str(size), "sweep": text, "median_ms": c.median_ms,
                   **{k: c.params[k] for k in variant.tunable}}
                  for c in result.candidates if c.status == "ok"]
        if args.candidates:
            args.candidates.write_text(json.dumps(timed) + "\n")
        if result.best is None:
            print(f"{size_text:15} {text:14} nothing timed")
            continue
        b = result.best
        print(f"{size_text:15} {text:14} {result.timed:5d} {b.median_ms:9.4f} "
              f"{seed_ms if seed_ms is None else round(seed_ms, 4)!s:>9}  "
              f"{json.dumps({k: b.params[k] for k in variant.tunable})}", flush=True)
        if str(size) in best and best[str(size)]["median_ms"] <= b.median_ms:
            continue
        best[str(size)] = {
            "variant": variant.name, "gpu": gpu,
            "compute_capability": current_compute_capability(),
            "size": str(size), "params": b.params,
            "source_sha256": source_fingerprint(project, variant),
            "median_ms": b.median_ms, "gflops": b.gflops, "rel_error": b.rel_error,
            "tuned_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "repeats": args.repeats,
            "configs": {"enumerated": len(list(enumerate_configs(swept))),
                        "rejected": result.rejected,
                        "failed": result.failed, "timed": result.timed},
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)  # after every sweep: a kill keeps them
        args.out.write_text(json.dumps(list(best.values()), indent=1) + "\n")
    print(f"{len(best)} winners in {time.perf_counter() - start:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
