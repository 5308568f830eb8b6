#!/usr/bin/env bash
# Where `ncuh profile`'s time beyond ncu goes (repo root, GPU machine; about 80 s on an H100):
# the post-processing children and Python's start on their own, the environment probe while an
# ncu profiles, three single-variant runs with their manifests' `timings` (with and without
# metrics.csv; wall minus `total_s` is Python's start, the imports and the exit), and
# `python -X importtime` of one run (the slowest imports printed, all under $OUT).
# Results of 2026-11-25: reports/profile/h100_overhead_parts_session5.txt.
set -uo pipefail
source benchmarks/gpu/setup_env.sh
NCU=$(command -v ncu)
TIMEFORMAT=%R
t() { local r; r=$( { time "$@" >/dev/null 2>&1; } 2>&1 ); echo "$r $*" | cut -c1-140; }
now() { date +%s.%N; }
sub() { python3 -c "print(round($1 - $2, 3))"; }
log "warm"; python3 -m harness profile --variant register_tiled --size 2048 --out /tmp/d >/dev/null 2>&1
log "alone"
for i in 1 2; do t nvidia-smi --query-gpu=name,driver_version,clocks.sm,pci.bus_id --format=csv,noheader; done
for i in 1 2; do t $NCU --version; done
for i in 1 2; do t python3 -m harness.profile.worker environment $NCU --no-cuda --list-gpus; done
t python3 -c pass
t python3 -c "import harness.cli"
t python3 -m harness --help
t python3 -m harness list
log "during an ncu profile"
run=$(ls -d /tmp/d/2* | tail -1)
hand=$(python3 -c "import json,shlex; a=json.load(open('$run/manifest.json'))['ncu']['command_lines'][0]; a[a.index('-o')+1]='/tmp/hand.ncu-rep'; print(shlex.join(a))")
( s=$(now); eval "$hand" > /tmp/hand.log 2>&1; echo "hand ncu $(sub $(now) $s)" ) &
sleep 2.5; t nvidia-smi --query-gpu=name,driver_version,clocks.sm,pci.bus_id --format=csv,noheader
t python3 -m harness.profile.worker environment $NCU --no-cuda --list-gpus
wait
log "ncuh profile, 3 runs, manifest timings"
for flag in "" "--metrics-csv"; do for i in 1 2 3; do
  s=$(now); out=$(python3 -m harness profile --variant register_tiled --size 2048 --out /tmp/e $flag 2>/dev/null | tail -1); w=$(sub $(now) $s)
  python3 -c "import json; m=json.load(open('$out/manifest.json')); t=m['timings']; print('flag=$flag wall', $w, t)"
done; done
python3 -X importtime -m harness profile --variant register_tiled --size 2048 --out /tmp/e 2> $OUT/importtime.txt >/dev/null
sort -t'|' -k2 -n -r $OUT/importtime.txt | head -15
