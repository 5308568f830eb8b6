#!/usr/bin/env bash
# From a real program to its kernels' pages, on a GPU host (two GPUs for the torchrun part;
# run from the repository root, with PyTorch, Triton and Nsight Compute).
#
#   bash benchmarks/gpu/program_top.sh OUT_DIR
#
# Runs benchmarks/bench_program_top.py on examples/transformer_step.py: the program alone,
# eager and compiled; `ncuh profile --top 5` and `ncuh writeup` of each (the time from the
# command to the pages, the first pass's overhead, the share of GPU time the top 5 cover);
# `ncu --set full` of the whole program, eager and compiled, stopped after FULL_SECONDS
# (default 60) and its time projected from its rate; the step from a CUDA graph and a
# two-process torchrun. Parts past BUDGET seconds (default 360; the last writeup may add 30)
# are skipped, torchrun where fewer than two GPUs are visible. PARTS (comma-separated) runs
# some of them; COMPILED_LAUNCHES gives full-compiled the compiled program's launch count
# without the compiled part. Writes only OUT_DIR/program_top.{json,md}, OUT_DIR/log.txt,
# OUT_DIR/run_<kind>.tar.xz and OUT_DIR/pages.tar.xz, and prints the table.
set -uo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0
fi
if [[ $# -ne 1 ]]; then
    echo "usage: bash $0 OUT_DIR (--help for what it does)" >&2; exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader
python3 benchmarks/bench_program_top.py --out "$OUT" --top "${TOP:-5}" \
    --budget "${BUDGET:-360}" --full-seconds "${FULL_SECONDS:-60}" \
    --parts "${PARTS:-eager,compiled,full,full-compiled,graph,torchrun}" \
    ${COMPILED_LAUNCHES:+--compiled-launches "$COMPILED_LAUNCHES"}
