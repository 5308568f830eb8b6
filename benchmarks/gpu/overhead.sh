# One step of the GPU session scripts, sourced after setup_env.sh: ncuh's overhead over the same
# ncu command typed by hand (register_tiled, 4096³, --set full; target <= 1.15x), with where
# its time goes. REPEATS alternating pairs (default 7); results in $OUT/profile_overhead.*.
log "profile overhead (${REPEATS:-7} pairs)"
timeout "${OVERHEAD_TIMEOUT_S:-400}" python3 benchmarks/bench_profile_overhead.py \
    --out "$OUT/profile_overhead.json" --skip-all --variant register_tiled --size 4096 \
    --repeats "${REPEATS:-7}" 2>&1 | tail -2
cat "$OUT/profile_overhead.md"
