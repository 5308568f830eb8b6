#!/usr/bin/env bash
# GPU session G (repo root, GPU machine; results under $OUT): the whole chain under ncu at 4096
# (timed: target < 5 min), the chain's benchmark at every size, and the iteration pages written
# from both on the machine (reports/chain). The run's manifest and the pages come back.
set -uo pipefail
source benchmarks/gpu/setup_env.sh

log "ncuh profile --all --size 4096"
start=$(date +%s.%N)
run=$(python3 -m harness profile --all --size 4096 --out /tmp/runs 2>/tmp/chain.log | tail -1)
end=$(date +%s.%N)
tail -14 /tmp/chain.log
echo "chain wall time: $(python3 -c "print(f'{$end - $start:.1f}')") s" | tee "$OUT/chain_time.txt"
cp "$run/manifest.json" "$OUT/chain_manifest.json"
du -sh "$run"/* | sort -h | tail -4

log "ncuh bench --all"
timeout 240 python3 -m harness bench --all --sizes 128,256,512,1024,2048,4096 --out /tmp/bench \
    2>&1 | tee "$OUT/bench_table.txt" | tail -30
cp /tmp/bench/bench.json "$OUT/chain_bench.json"

log "ncuh writeup"
start=$(date +%s.%N)
python3 -m harness writeup "$run" /tmp/bench/bench.json --out /tmp/pages 2>&1 | tail -3
end=$(date +%s.%N)
echo "writeup: $(python3 -c "print(f'{$end - $start:.1f}')") s"
grep -A6 "Hottest SASS" /tmp/pages/04_register_tiled*.md | head -10
(cd /tmp/pages && tar czf "$OUT/chain_pages.tgz" .)
ls -la "$OUT"
log "done"
