"""Build small synthetic run directories for the `ncuh diff` tests.

Each run holds copies of the real fixture report and, optionally, a bench.json whose raw
samples are drawn from a seeded normal distribution: the timing "change" is what the test
injects, the profiler counters are the real ones of the fixture's kernels.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from packed_fixtures import NAIVE_SMEM_REPORT

SIZE = [1024, 1024, 1024]
H100_ENV = {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
            "driver": "580.159.04", "ncu_version": "2025.3.1"}


def samples(median_ms: float, noise: float, seed: int, n: int = 30) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in median_ms * (1.0 + noise * rng.standard_normal(n))]


def make_run(root: Path, name: str, variants: dict[str, list[float] | None],
             environment: dict[str, Any] | None = None,
             failed: dict[str, str] | None = None, report: Path = NAIVE_SMEM_REPORT) -> Path:
    """A run directory with one entry per variant (each a copy of `report`), bench samples
    for the variants that have them, and failed entries (variant -> error) without report."""
    run = root / name
    run.mkdir(parents=True)
    entries, results = [], []
    for variant, variant_samples in variants.items():
        label = f"{variant}_1024"
        shutil.copyfile(report, run / f"{label}.ncu-rep")
        entries.append({"label": label, "variant": variant, "size": SIZE, "params": {},
                        "report": f"{label}.ncu-rep", "status": "ok", "error": None})
        if variant_samples:
            results.append({"variant": variant, "size": SIZE, "params": {},
                            "samples_ms": variant_samples,
                            "median_ms": float(np.median(variant_samples)),
                            "status": "ok", "error": None})
    for variant, error in (failed or {}).items():
        entries.append({"label": f"{variant}_1024", "variant": variant, "size": SIZE,
                        "params": {}, "report": None, "status": "failed", "error": error})
    env = dict(H100_ENV if environment is None else environment)
    manifest = {"schema": "ncuh.run/1", "ncuh_version": "0.1.0", "git_commit": None,
                "environment": env, "ncu": {"set": "full"}, "started_at": "2026-11-21T00:00:00Z",
                "finished_at": "2026-11-21T00:01:00Z", "entries": entries}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    if results:
        bench = {"schema": "ncuh.bench/1", "ncuh_version": "0.1.0",
                 "created_at": "2026-11-21T00:00:00Z", "environment": env,
                 "settings": {"repeats": 30, "warmup": 5, "l2_flush": True, "alpha": 1.0,
                              "beta": 0.0}, "results": results}
        (run / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    return run
