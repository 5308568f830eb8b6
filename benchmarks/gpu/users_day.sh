#!/usr/bin/env bash
# The user's day on a fresh install (GPU machine, run from the repository root).
#
#   bash benchmarks/gpu/users_day.sh OUT_DIR
#
# Installs ncuh from this checkout into a fresh virtual environment under OUT_DIR, then, from an
# empty folder and with an empty user cache, runs what a new user runs: the bundled SGEMM bench
# at 1024,2048,4096 (the shipped tuning winners must be found), and `ncuh init` end to end
# (list, bench, profile, writeup, the starter's own tests). Needs an NVIDIA GPU, a CUDA 13
# driver (CUDA=cuda12 for a CUDA 12 one) and Nsight Compute's `ncu` on PATH. Writes only under
# OUT_DIR: bench/, init/ (the project with its runs and pages), results.json (exit statuses,
# date, GPU, the command) and one log per step.
set -uo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0
fi
if [[ $# -ne 1 ]]; then
    echo "usage: bash $0 OUT_DIR (--help for what it does)" >&2; exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
REPO=$PWD
export NCUH_CACHE_DIR="$OUT/cache" PYTHONUNBUFFERED=1
log() { echo "== $(date -u +%T) $*"; }

log "fresh install into $OUT/venv"
python3 -m venv "$OUT/venv" && "$OUT/venv/bin/pip" install -q "$REPO[${CUDA:-cuda13},test]" \
    > "$OUT/install.log" 2>&1 || { tail -5 "$OUT/install.log"; exit 1; }
NCUH="$OUT/venv/bin/ncuh"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)

log "bundled project: ncuh bench --all --sizes 1024,2048,4096"
(cd "$OUT" && "$NCUH" bench --all --sizes 1024,2048,4096 --out bench) > "$OUT/bench.log" 2>&1
bench_status=$?
tail -12 "$OUT/bench.log"

log "ncuh init, end to end"
(cd "$OUT" && rm -rf init && "$NCUH" init init && cd init && "$NCUH" list \
    && "$NCUH" bench --all --out bench \
    && run=$("$NCUH" profile --all --bench --out runs | tail -1) \
    && "$NCUH" writeup "$run" --out pages \
    && "$OUT/venv/bin/python" -m pytest -q -p no:cacheprovider test_saxpy.py) \
    > "$OUT/init.log" 2>&1
init_status=$?
tail -8 "$OUT/init.log"

cat > "$OUT/results.json" <<JSON
{"date": "$(date -u +%F)", "gpu": "$GPU", "command": "bash benchmarks/gpu/users_day.sh OUT_DIR",
 "bench_exit_status": $bench_status, "init_exit_status": $init_status}
JSON
log "done: $OUT/results.json"
[[ $bench_status -eq 0 && $init_status -eq 0 ]]
