#!/usr/bin/env bash
# GPU session H (repo root, GPU machine; results under $OUT): the profile GPU tests (the user
# program path included), the chain's pages regenerated on the final code (chain_pages.sh),
# and a second, independent measurement of ncuh's overhead over ncu by hand.
set -uo pipefail
source benchmarks/gpu/setup_env.sh

log "profile GPU tests"
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_profile_gpu.py 2>&1 \
    | tee "$OUT/gpu_tests_profile.log" | tail -4

bash benchmarks/gpu/chain_pages.sh

source benchmarks/gpu/overhead.sh
log "done"
