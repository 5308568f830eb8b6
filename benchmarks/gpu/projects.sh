#!/usr/bin/env bash
# GPU session (repo root, GPU machine; results under $OUT): projects on a fresh install.
#
#   OUT=/tmp/ncuh-out bash benchmarks/gpu/projects.sh            # all three stages
#   OUT=/tmp/ncuh-out STAGES="bench" bash benchmarks/gpu/projects.sh  # one (or two) of them
#   (STAGES: bench tests init; each fits the device's 10-minute limit on an H100 alone)
#
# 1. ncuh installed fresh into its own --target (no checkout on PYTHONPATH), run from an empty
#    directory with an empty NCUH_CACHE_DIR: the bundled project's shipped tuning winners must
#    be found (bench.json records each result's `tuning`: "shipped" for autotuned).
#    Targets (issue 10): autotuned >= 0.80x cuBLAS at 1024^3, >= 0.90x at 2048^3 and 4096^3.
# 2. The project GPU tests and the ported SGEMM GPU tests (pytest -m gpu).
# 3. `ncuh init` end to end as a user: list, bench --all, profile --all, writeup.
set -uo pipefail
source benchmarks/gpu/setup_env.sh
REPO=$PWD

log "wheels: ncu_report and pydantic (and whatever else .whl/ carries) into /tmp/site"
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site \
    .whl/*.whl

log "fresh install of ncuh into /tmp/ncuh-site"
rm -rf /tmp/ncuh-site
if ! python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/ncuh-site . \
        > "$OUT/pip_install.log" 2>&1; then
    tail -3 "$OUT/pip_install.log"
    log "pip could not build here: lay the package out as the wheel does (see pyproject.toml)"
    mkdir -p /tmp/ncuh-site && cp -r harness /tmp/ncuh-site/ && rm -rf /tmp/ncuh-site/harness/kernels
    cp -r kernels /tmp/ncuh-site/harness/kernels && cp -r templates /tmp/ncuh-site/harness/templates
fi
rm -rf build
ls /tmp/ncuh-site/harness/kernels/sgemm/ | tee "$OUT/installed_sgemm_files.txt"

CLEAN=$(mktemp -d)
EMPTY_CACHE=$(mktemp -d)
installed() {  # the installed ncuh, from a clean directory, no user cache, no checkout
    (cd "$CLEAN" && env -u NCUH_PROJECT PYTHONPATH=/tmp/ncuh-site:/tmp/site \
        NCUH_CACHE_DIR="$EMPTY_CACHE" python3 -m harness "$@")
}

STAGES=${STAGES:-bench tests init}
stage() { [[ " $STAGES " == *" $1 "* ]]; }

if stage bench; then
log "bundled project, fresh install: ncuh bench --all --sizes 1024,2048,4096"
installed list | tail -3
installed bench --all --sizes 1024,2048,4096 --out "$OUT/bench_fresh" \
    > "$OUT/bench_fresh_table.txt" 2> "$OUT/bench_fresh.log"
echo "exit status $?" >> "$OUT/bench_fresh.log"
cat "$OUT/bench_fresh_table.txt"
python3 - "$OUT/bench_fresh/bench.json" <<'PY' | tee "$OUT/bench_fresh_summary.txt"
import json, sys
data = json.load(open(sys.argv[1]))
ref = data["project"]["reference"]
for r in data["results"]:
    if r["variant"] == "autotuned":
        factor = (r.get("speedup") or {}).get(ref)
        print(f"autotuned {'x'.join(map(str, r['size']))}: {r['status']}, params from "
              f"{r.get('tuning')}, {factor:.3f}x {data['project']['reference_name']}"
              if factor else f"autotuned {r['size']}: {r['status']} {r.get('error')}")
PY
echo "user cache after the run (must be empty): $(ls -A "$EMPTY_CACHE")" \
    | tee -a "$OUT/bench_fresh_summary.txt"

fi

if stage tests; then
log "GPU tests: projects, bench, SGEMM, profile"
python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/test_projects_gpu.py \
    tests/test_bench_gpu.py tests/test_sgemm_gpu.py tests/test_profile_gpu.py \
    2>&1 | tee "$OUT/gpu_tests_projects.log" | tail -6

fi

if stage init; then
log "ncuh init, end to end as a user (installed copy)"
USERDIR=$(mktemp -d)
(cd "$USERDIR" && env -u NCUH_PROJECT PYTHONPATH=/tmp/ncuh-site:/tmp/site \
    NCUH_CACHE_DIR="$EMPTY_CACHE" bash -c '
    set -x
    python3 -m harness init mine && cd mine &&
    python3 -m harness list &&
    python3 -m harness bench --all --sizes 2^20,2^24,2^26 --out bench &&
    run=$(python3 -m harness profile --all --size 2^24 --bench --out runs | tail -1) &&
    python3 -m harness writeup "$run" --out pages &&
    PYTHONPATH=/tmp/ncuh-site:/tmp/site python3 -m pytest -q -p no:cacheprovider test_saxpy.py
') > "$OUT/init_project.log" 2>&1
echo "exit status $?" >> "$OUT/init_project.log"
tail -30 "$OUT/init_project.log"
mkdir -p "$OUT/init_project"
cp -r "$USERDIR/mine/bench" "$USERDIR/mine/pages" "$OUT/init_project/" 2>/dev/null
cp "$USERDIR"/mine/runs/*/manifest.json "$OUT/init_project/manifest.json" 2>/dev/null
fi
log "done"
