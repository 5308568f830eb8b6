#!/usr/bin/env bash
# Profiling on every GPU of a host (two GPUs or more; run from the repository root; ncuh
# installed).
#
#   bash benchmarks/gpu/profile_gpus.sh OUT_DIR
#
# Runs benchmarks/bench_profile_gpus.py: whether two ncu processes on two GPUs run at once,
# then `ncuh profile --all --size 4096 --gpus 0` against `--gpus all`, CHAIN_REPEATS times in
# turn (default 2; target <= 0.55x on two GPUs). SKIP_LOCK=1 leaves the lock part out.
# Writes only OUT_DIR/profile_gpus.{json,md}.
set -uo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0
fi
if [[ $# -ne 1 ]]; then
    echo "usage: bash $0 OUT_DIR (--help for what it does)" >&2; exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
export NCUH_CACHE_DIR="$OUT/cache" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader
python3 benchmarks/bench_profile_gpus.py --out "$OUT/profile_gpus.json" --size "${SIZE:-2048}" \
    --all-size "${ALL_SIZE:-4096}" --chain-repeats "${CHAIN_REPEATS:-2}" \
    $([[ ${SKIP_LOCK:-0} == 1 ]] && echo --skip-lock)
status=$?
cat "$OUT/profile_gpus.md" 2>/dev/null | head -40
exit $status
