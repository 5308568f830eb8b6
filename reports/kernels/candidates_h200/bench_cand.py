"""Device script: correctness + interleaved timing of double_buffered candidates vs cuBLAS.

    PYTHONPATH=. python3 reports/kernels/candidates_h200/bench_cand.py   (OUT=dir for JSON)

Each candidate source replaces kernels/double_buffered.cu (cand_f: async_copy.cu) in memory;
this is run 2's plan (run 1 also had cand_c, cand_d and cand_f: see run1.log).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import harness.sgemm as hs
from harness.variants import resolve, validate_params
from harness.verify import random_operands, verify

from benchmarks.sgemm_speed import CORRECTNESS_SHAPES, time_kernel

OUT = Path(os.environ.get("OUT", "."))
HERE = Path(__file__).parent
ORIG = hs.source_text
CANDS = {
    "base": None,
    "e": HERE / "cand_e.cu",
    "b": HERE / "cand_b.cu",
    "m": HERE / "cand_m.cu",
    "k": HERE / "cand_k.cu",
    "h": HERE / "cand_h.cu",
}
TARGET = {"f": "async_copy.cu"}
CUR = {"name": "base"}


def patched(variant):
    path = CANDS[CUR["name"]]
    if path is None or variant.source != TARGET.get(CUR["name"], "double_buffered.cu"):
        return ORIG(variant)
    common = (Path("kernels") / "common.cuh").read_text().replace("#pragma once\n", "")
    return path.read_text().replace('#include "common.cuh"', common)


hs.source_text = patched
AT = dict(resolve("autotuned").params)
AC = dict(AT, STAGES=3)
DB = dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, GROUP=8, MIN_BLOCKS=2)
TWO = [("autotuned", "def", {}), ("double_buffered", "def", None)]
PLAN = {
    "base": TWO,
    "e": [
        *TWO,
        ("autotuned", "g16", dict(GROUP=16)),
        ("autotuned", "g4", dict(GROUP=4)),
        ("autotuned", "w32x128", dict(WM=32, WN=128)),
        ("autotuned", "256x128", dict(BM=256, BN=128, TM=16, TN=8)),
    ],
    "b": [
        *TWO,
        ("autotuned", "db_w64x32", dict(DB, WM=64, WN=32)),
        ("autotuned", "db_g16", dict(DB, GROUP=16)),
        ("autotuned", "db_g4", dict(DB, GROUP=4)),
    ],
    "m": TWO,
    "k": TWO,
    "h": TWO,
}
t_start = time.time()
kernels = {}  # key -> {size: kernel}
log = {"correct": [], "time": {}}
fails = 0
for cand in CANDS:
    CUR["name"] = cand
    hs._FUNCTIONS.clear()
    for vname, tag, over in PLAN[cand]:
        params = dict(AT, **over) if vname == "autotuned" else over
        key = f"{cand}/{vname}/{tag}"
        if validate_params(vname, params, (4096, 4096, 4096)):
            print(key, "invalid", validate_params(vname, params, (4096,) * 3), flush=True)
            continue
        if time.time() - t_start > 200:
            print(key, "skipped: out of time", flush=True)
            continue
        try:
            worst, bad = 0.0, 0
            for shape in CORRECTNESS_SHAPES:
                for beta in (-0.75, 0.0):
                    seed = hash((shape, beta)) & 0xFFFF
                    r = verify(vname, shape, alpha=1.5, beta=beta, seed=seed, params=params)
                    worst = max(worst, r.rel_error)
                    bad += not r.ok
            import cupy

            for shape in [(17, 33, 65), (1000, 1030, 999), (129, 260, 64)]:  # sentinel after C
                m, n, _ = shape
                a, b, _ = random_operands(shape, 1.0, seed=11)
                buf = cupy.full(m * n + 65536, 7.0, dtype=cupy.float32)
                hs.build(vname, shape, params)(a, b, buf[: m * n].reshape(m, n), 1.0, 0.0)
                bad += int((buf[m * n :] != 7.0).sum()) > 0
        except Exception as error:  # a candidate that fails to build is a result too
            print(key, "ERROR", str(error)[:300], flush=True)
            fails += 1
            continue
        fails += bad
        ks = {n: hs.build(vname, (n, n, n), params) for n in (1024, 2048, 4096)}
        kernels[key] = ks
        k4 = ks[4096]
        log["correct"].append(
            dict(
                key=key,
                worst=worst,
                bad=bad,
                regs=k4.registers,
                spill=k4.spill_bytes,
                params=k4.params,
            )
        )
        print(
            f"{key:28s} worst={worst:.2e} bad={bad} regs={k4.registers} "
            f"spill={k4.spill_bytes} t={time.time() - t_start:.0f}s",
            flush=True,
        )
kernels["cublas"] = {n: hs.build("cublas", (n, n, n)) for n in (1024, 2048, 4096)}
print(f"compiled+verified in {time.time() - t_start:.0f}s; failures={fails}", flush=True)

ROUNDS = 7
times = {key: {n: [] for n in (1024, 2048, 4096)} for key in kernels}
for rnd in range(ROUNDS):
    for n in (4096, 2048, 1024):
        if n != 4096 and rnd >= 3:
            continue
        for key, ks in kernels.items():
            med, _, _, _ = time_kernel(ks[n], (n, n, n), 1.5, -0.75, budget_s=0.1, max_repeats=15)
            times[key][n].append(med)
    print(f"round {rnd} done t={time.time() - t_start:.0f}s", flush=True)
log["time"] = times
(OUT / "cand.json").write_text(json.dumps(log, indent=1))
cub = {n: statistics.median(times["cublas"][n]) for n in (1024, 2048, 4096)}
print("\nkey                          " + "".join(f"{n:>16d}" for n in (1024, 2048, 4096)))
for key in kernels:
    cells = ""
    for n in (1024, 2048, 4096):
        ms = statistics.median(times[key][n])
        g = 2 * n**3 / ms / 1e6
        cells += f"{g:9.0f} ({ms and cub[n] / ms:5.1%})"
    spread = (max(times[key][4096]) - min(times[key][4096])) / statistics.median(times[key][4096])
    print(f"{key:28s} {cells}  4096 spread {spread:.1%}")
print(f"correctness failures: {fails}  total {time.time() - t_start:.0f}s")
sys.exit(1 if fails else 0)
