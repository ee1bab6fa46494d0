#!/usr/bin/env bash
# The sweep benchmark of issue 5, on a GPU machine from the repository root after a build:
#  1. the main job's sweep, timed per definition: `kh sweep` of each definition's example
#     candidate over its full official set (3 strict trials, GPU references, cupti timing at the
#     official counts) into a fresh store, with `kh show --json` and `kh report` of each;
#  2. a two-candidate interleaved sweep over the full GDN decode set (the example and the
#     planted-fault candidate built with FAULT=none), with `kh compare --json` and `kh report`;
#  3. the store exported as one bundle (OUT_DIR/sweeps.khb), what memory/ keeps.
# Summarise with bench/engine/summarize_library_sweep.py OUT_DIR RESULT.json COMMIT.
#
# Usage: bench/engine/library_sweep.sh OUT_DIR
set -u
out=${1:?usage: bench/engine/library_sweep.sh OUT_DIR}
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
store="$out/store"
export KH_MEMORY_DIR=  # a fresh store: only this run's results
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
: >"$out/wall_seconds.txt"
common=(--backend cuda --timing cupti --trials 3 --cache "$cache" --logs "$out/logs" --store "$store")

seconds_since() { python3 -c "import time; print(round(time.time() - $1, 2))"; }

for dir in examples/*/; do
  def=$(basename "$dir")
  start=$(date +%s.%N)
  "$kh" sweep "$dir" "${common[@]}" --json >"$out/sweep_$def.json" 2>"$out/sweep_$def.log"
  status=$?
  echo "$def $status $(seconds_since "$start")" | tee -a "$out/wall_seconds.txt"
  hash=$(python3 -c "import json; print(json.load(open('$out/sweep_$def.json'))['candidates'][0]['hash'])")
  "$kh" show "$hash" --store "$store" --json >"$out/show_$def.json" 2>>"$out/sweep_$def.log"
  "$kh" report "$def" --store "$store" --out "$out/report_$def" >>"$out/sweep_$def.log" 2>&1
done

pair_def=gdn_decode_qk4_v8_d128_k_last
start=$(date +%s.%N)
"$kh" sweep examples/$pair_def tests/candidates/gdn_decode_cuda@FAULT=none "${common[@]}" --json \
  >"$out/pair_sweep.json" 2>"$out/pair_sweep.log"
echo "pair $? $(seconds_since "$start")" | tee -a "$out/wall_seconds.txt"
pair=$(python3 -c "import json; print(json.load(open('$out/pair_sweep.json'))['sweep'])")
"$kh" compare gdn_decode_simple_cuda gdn_decode_cuda --sweep "$pair" --store "$store" --json \
  >"$out/pair_compare.json" 2>>"$out/pair_sweep.log"
"$kh" report $pair_def --sweep "$pair" --store "$store" --out "$out/report_pair" >>"$out/pair_sweep.log" 2>&1
"$kh" store export --store "$store" -o "$out/sweeps.khb"
echo "export $? $(stat -c %s "$out/sweeps.khb") bytes"
