#!/usr/bin/env bash
# Issue 13 on a host with two GPUs or more (repo root; results under $OUT; about 8 minutes on two
# H200s): whether two ncu processes on two GPUs take turns on ncu's lock file with one TMPDIR
# and run at once with one each, then `ncuh profile --all --size 4096 --gpus 0` against
# `--gpus all` (target <= 0.55), CHAIN_REPEATS times in turn (default 2). Writes
# $OUT/profile_gpus.{json,md} and prints the table last. SKIP_LOCK=1 leaves the lock part out.
set -uo pipefail
source benchmarks/gpu/setup_env.sh
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader

log "profile --gpus (lock experiment, chain on one GPU and on all)"
timeout "${GPUS_TIMEOUT_S:-570}" python3 benchmarks/bench_profile_gpus.py \
    --out "$OUT/profile_gpus.json" --size "${SIZE:-2048}" --all-size "${ALL_SIZE:-4096}" \
    --chain-repeats "${CHAIN_REPEATS:-2}" $([[ ${SKIP_LOCK:-0} == 1 ]] && echo --skip-lock) 2>&1 \
    | tail -25
