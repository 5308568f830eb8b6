#!/usr/bin/env bash
# GPU session for the reduction chain (repo root, GPU machine; results under $OUT):
#   bench   every variant + CUB + the device copy at 2^10 ... 2^28  (~2-4 min)
#   profile ncuh profile --all at 2^26 (ten variants under ncu)     (~3-6 min)
#   writeup the iteration pages from both, tarred for reports/reduction/
#   tests   the GPU tests of the chain (every variant and CUB on n = 1 ... 2^26)   (~1-2 min)
# Steps may be run one per call (each under the 10-minute limit): STEPS="bench" then
# STEPS="profile writeup"; /tmp/red-* carries over while the machine stays warm. Unpack with
#   tar -xzf reduction_pages.tgz -C reports/reduction/
set -uo pipefail
source benchmarks/gpu/setup_env.sh
log "wheels: ncu_report and pydantic (whatever .whl/ carries) into /tmp/site"
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
STEPS=${STEPS:-bench profile writeup tests}
ncuh() { python3 -m harness --project kernels/reduction "$@"; }
SIZES=$(python3 -c "print(','.join(f'2^{k}' for k in range(10, 29)))")

for step in $STEPS; do
  case $step in
  bench)
    log "ncuh bench --all --sizes $SIZES"
    start=$(date +%s)
    ncuh bench --all --sizes "$SIZES" --out /tmp/red-bench 2>&1 | tee "$OUT/reduction_bench.txt" | tail -60
    echo "bench wall time: $(( $(date +%s) - start )) s"
    cp /tmp/red-bench/bench.json "$OUT/reduction_bench.json"
    ;;
  profile)
    log "ncuh profile --all --size 2^26"
    start=$(date +%s)
    ncuh profile --all --size 2^26 --out /tmp/red-runs 2>/tmp/red-profile.log | tail -1 > /tmp/red-run
    tail -20 /tmp/red-profile.log
    echo "profile wall time: $(( $(date +%s) - start )) s" | tee "$OUT/reduction_profile_time.txt"
    cp "$(cat /tmp/red-run)/manifest.json" "$OUT/reduction_manifest.json"
    ;;
  writeup)
    log "ncuh writeup"
    rm -rf /tmp/red-pages
    ncuh writeup "$(cat /tmp/red-run)" /tmp/red-bench/bench.json --out /tmp/red-pages 2>&1 | tail -5
    cp /tmp/red-bench/bench.json /tmp/red-pages/bench.json
    ls /tmp/red-pages | head -40
    (cd /tmp/red-pages && tar czf "$OUT/reduction_pages.tgz" .)
    ;;
  tests)
    log "GPU tests of the reduction chain"
    python3 -m pytest -q -m gpu tests/test_reduction_gpu.py 2>&1 | tee "$OUT/reduction_gpu_tests.txt" | tail -15
    ;;
  *) echo "unknown step $step (bench, profile, writeup, tests)"; exit 2 ;;
  esac
done
ls -la "$OUT"
log "done"
