#!/usr/bin/env bash
# GPU session C (repo root, GPU machine; results under $OUT): the chain under ncu at 4096 for
# the committed pages (timed), two consecutive `ncuh profile --all --bench` runs of the
# unchanged chain, diffed (expect no regression), and ncuh's overhead over the same ncu command
# typed by hand (target <= 1.15x).
set -uo pipefail
source benchmarks/gpu/setup_env.sh
SIZE=${SIZE:-1024}
CHAIN=${CHAIN:-1}  # CHAIN=0 skips the 4096 chain run

if [ "$CHAIN" = 1 ]; then
log "ncuh profile --all --size 4096"
start=$(date +%s.%N)
python3 -m harness profile --all --size 4096 --out /tmp/runs 2>&1 | tail -14
end=$(date +%s.%N)
echo "chain wall time: $(python3 -c "print(f'{$end - $start:.1f}')") s" | tee "$OUT/chain_time.txt"
(cd /tmp/runs && tar czf /tmp/chain_run.tgz -- */ && split -b 15m /tmp/chain_run.tgz "$OUT/chain_run.tgz.part-")
fi

log "run 1 of 2: ncuh profile --all --size $SIZE --bench"
baseline=$(python3 -m harness profile --all --size "$SIZE" --bench --out /tmp/diffruns 2>/tmp/run1.log | tail -1)
tail -4 /tmp/run1.log; echo "baseline: $baseline"
log "run 2 of 2"
current=$(python3 -m harness profile --all --size "$SIZE" --bench --out /tmp/diffruns 2>/tmp/run2.log | tail -1)
tail -4 /tmp/run2.log; echo "current: $current"

log "ncuh diff"
python3 -m harness diff "$baseline" "$current" --format md --out "$OUT/diff_consecutive.md"
echo "ncuh diff exit status: $?" | tee "$OUT/diff_exit.txt"
python3 -m harness diff "$baseline" "$current" --format json --out "$OUT/diff_consecutive.json"
head -c 3000 "$OUT/diff_consecutive.md"; echo
(cd /tmp/diffruns && tar czf "$OUT/diff_runs_meta.tgz" -- */manifest.json */bench.json)

REPEATS=${REPEATS:-3} source benchmarks/gpu/overhead.sh
ls -la "$OUT"
log "done"
