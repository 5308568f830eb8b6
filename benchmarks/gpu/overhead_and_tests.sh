#!/usr/bin/env bash
# GPU session F (repo root, GPU machine; results under $OUT): ncuh's overhead over the same ncu
# command by hand with where its time goes (target <= 1.15x), then every GPU test.
set -uo pipefail
source benchmarks/gpu/setup_env.sh

source benchmarks/gpu/overhead.sh
python3 -c "
import json
for p in json.load(open('$OUT/profile_overhead.json'))['overhead']['phases_s']: print(p)"

log "GPU tests"
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | tail -4
log "done"
