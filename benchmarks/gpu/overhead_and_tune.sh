#!/usr/bin/env bash
# GPU session E (repo root, GPU machine; results under $OUT): ncuh's overhead over the same ncu
# command by hand with where its time goes (target <= 1.15x), then the autotune sweep for this
# GPU and the best variants against cuBLAS at 4096.
set -uo pipefail
source benchmarks/gpu/setup_env.sh

REPEATS=${REPEATS:-5} source benchmarks/gpu/overhead.sh

log "autotune"
timeout 200 python3 -m harness bench --variant autotuned --sizes 1024,2048,4096 --tune \
    --tune-limit 24 --repeats 10 --no-references --out /tmp/tune 2>&1 | tail -6
cp "$NCUH_CACHE_DIR/autotune.json" "$OUT/"

log "best variants against cuBLAS at 4096"
timeout 90 python3 -m harness bench --variant autotuned --variant double_buffered --sizes 4096 \
    --out /tmp/bench4096 2>&1 | tee "$OUT/bench_4096.txt" | tail -12
cp /tmp/bench4096/bench.json "$OUT/bench_4096.json"
log "done"
