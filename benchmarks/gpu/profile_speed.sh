#!/usr/bin/env bash
# Issue 13 on one GPU (repo root, GPU machine; results under $OUT; about 7 minutes on an H100,
# so split it with PARTS=overhead / PARTS=chain,pairs to stay under a 10-minute call):
#  1. overhead: `ncuh profile --variant register_tiled --size 2048` (default `pages` set; VARIANT,
#     SIZE, REPEATS choose another) against the same ncu command by hand, 5 alternating repeats,
#     plus `--metrics-csv` unless METRICS_CSV_TOO=0 and, with FIRST_RUN_TOO=1, a request's first
#     run (no kept plan: NCUH_PLAN_CACHE=off) (target <= 1.03);
#  2. `ncuh profile --all --size 4096 --set pages`: wall time against the sum of ncu's own times
#     (target <= 1.01); with HEAD_START_OFF=1 the same chain again with NCUH_HEAD_START=off
#     (each ncu alone: the by-hand sum, and what a runner started early changes in the metrics);
#     then the chain with `--set full`: pages/full wall time (target <= 0.6) and both pass counts;
#  3. pages/full fixture pairs (PAIR_VARIANTS, default register_tiled, at 1024) for
#     tests/test_pages_set.py, with ncu's raw and details pages beside each report, under
#     $OUT/fixtures/ (copy into tests/fixtures/).
# Writes $OUT/profile_speed.{json,md} and prints a short table last.
set -uo pipefail
source benchmarks/gpu/setup_env.sh

# PARTS picks what runs (default all three): overhead, chain (pages and full), pairs.
PARTS=${PARTS:-overhead,chain,pairs}
args=()
[[ $PARTS == *overhead* ]] || args+=(--skip-overhead)
[[ $PARTS == *chain* ]] && args+=(--compare-full --warm-up) || args+=(--skip-all)
[[ ${HEAD_START_OFF:-0} == 1 ]] && args+=(--head-start-off-too)
[[ $PARTS == *pairs* ]] && args+=(--pair-dir "$OUT/fixtures" --pair-size "${PAIR_SIZE:-1024}" \
    --pair-variants "${PAIR_VARIANTS:-register_tiled}")
log "profile speed: $PARTS"
timeout "${SPEED_TIMEOUT_S:-570}" python3 benchmarks/bench_profile_overhead.py \
    --out "$OUT/profile_speed.json" --variant "${VARIANT:-register_tiled}" --size "${SIZE:-2048}" \
    --set pages --repeats "${REPEATS:-5}" $([[ ${METRICS_CSV_TOO:-1} == 1 ]] && echo --metrics-csv-too) \
    $([[ ${FIRST_RUN_TOO:-0} == 1 ]] && echo --first-run-too) \
    $([[ ${POST_STEPS:-0} == 1 ]] || echo --skip-post-steps) \
    --all-size "${ALL_SIZE:-4096}" "${args[@]}" 2>&1 | tail -4
du -sh "$OUT"/fixtures/* 2>/dev/null
echo
cat "$OUT/profile_speed.md" 2>/dev/null | head -60
echo
log "summary"
cat "$OUT/profile_speed_table.txt" 2>/dev/null || echo "no summary: the benchmark did not finish"
