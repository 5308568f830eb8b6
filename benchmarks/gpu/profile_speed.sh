#!/usr/bin/env bash
# Profiling speed on one GPU (GPU machine, run from the repository root; ncuh installed).
#
#   bash benchmarks/gpu/profile_speed.sh OUT_DIR
#
# Runs benchmarks/bench_profile_overhead.py: one variant (register_tiled at 2048) with
# `ncuh profile` against the same ncu command typed by hand, alternating repeats (target
# <= 1.03x); the chain at 4096 with `--all` against the sum of its entries' ncu seconds (target
# <= 1.01x); the chain with `--set pages` against `--set full` (wall time, passes, findings).
# VARIANT, SIZE, REPEATS and ALL_SIZE change the defaults; PARTS=overhead or PARTS=chain runs
# one half (each fits a 10-minute call on an H100). Writes only OUT_DIR/profile_speed.{json,md}.
set -uo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0
fi
if [[ $# -ne 1 ]]; then
    echo "usage: bash $0 OUT_DIR (--help for what it does)" >&2; exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
export NCUH_CACHE_DIR="$OUT/cache" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
ncu --version | tail -1

PARTS=${PARTS:-overhead,chain}
args=()
[[ $PARTS == *overhead* ]] || args+=(--skip-overhead)
if [[ $PARTS == *chain* ]]; then args+=(--compare-full --warm-up); else args+=(--skip-all); fi
python3 benchmarks/bench_profile_overhead.py --out "$OUT/profile_speed.json" \
    --variant "${VARIANT:-register_tiled}" --size "${SIZE:-2048}" --set pages \
    --repeats "${REPEATS:-7}" --skip-post-steps --all-size "${ALL_SIZE:-4096}" "${args[@]}"
status=$?
cat "$OUT/profile_speed.md" 2>/dev/null | head -60
exit $status
