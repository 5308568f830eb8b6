#!/usr/bin/env bash
# GPU session D (repo root, GPU machine; results under $OUT): every GPU test on the final code,
# ncuh's overhead over the same ncu command by hand, and one profile + writeup to show the
# manifest's phase timings and the hot SASS instructions mapped to kernels/*.cu lines.
set -uo pipefail
source benchmarks/gpu/setup_env.sh

log "GPU tests"
python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | tail -4

REPEATS=${REPEATS:-3} source benchmarks/gpu/overhead.sh

log "one profile, its timings and its hot instructions"
run=$(python3 -m harness profile --variant register_tiled --size 1024 --out /tmp/final 2>/dev/null | tail -1)
python3 -c "import json; print(json.load(open('$run/manifest.json')).get('timings'))"
python3 -m harness writeup "$run" --out /tmp/final_pages --format md >/dev/null
grep -A8 "Hottest SASS" /tmp/final_pages/*register_tiled*.md
cp "$run/manifest.json" "$OUT/register_tiled_1024.manifest.json"
log "done"
