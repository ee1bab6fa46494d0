#!/usr/bin/env bash
# Where the DSA split kernel's warps spend an official workload: Nsight Compute's warp-state
# sampling (every 32 cycles, SASS level, caches flushed as ncu does by default) of the first
# split_kv_attention launch, then summarize_dsa_stalls.py splits the samples into the kernel's
# phases (indices, gather issue, first-block wait, MMAs, results). Made the profile section of
# bench/results/2026-12-05_dsa_attention_block_groups_h100.json.
# Usage: OUT=DIR [KH=path/to/kh] bench/kernels/profile_dsa_stalls.sh [CANDIDATE] [WORKLOAD_UUID ...]
#   CANDIDATE: a folder, optionally @NAME=value,... (default kernels/dsa_attention); workloads
#   default to 8 tokens x 2048 scattered rows (02d6ae9c...). Needs ncu and a GPU; the build cache
#   is KH_CACHE.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:?set OUT}
kh=${KH:-$PWD/build/default/kh}
cache=${KH_CACHE:-/tmp/khcache}
cand=${1:-kernels/dsa_attention}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- 02d6ae9c64ab42ff93f05c23c53bcb7d
mkdir -p "$out"
# Build first: under ncu the worker's build would outlast its start-up timeout.
"$kh" eval "$cand" -w "$1" --backend cuda --trials 1 --official --cache "$cache" \
  >"$out/build.log" 2>&1 || { echo "build or eval failed: $out/build.log"; exit 1; }
for w in "$@"; do
  timeout 300 ncu --clock-control none --target-processes all -k regex:split_kv_attention -c 1 \
    --section SourceCounters --section WarpStateStats --section LaunchStats --section SpeedOfLight \
    --warp-sampling-interval 0 --import-source no -f -o "$out/$w" \
    "$kh" eval "$cand" -w "$w" --backend cuda --trials 1 --official --cache "$cache" \
    >"$out/$w.log" 2>&1
  rc=$?
  echo "$w: ncu rc=$rc"
  [ $rc -eq 0 ] || { echo "$w: ncu failed, see $out/$w.log"; continue; }
  ncu --import "$out/$w.ncu-rep" --page source --csv --print-source=sass >"$out/$w.sass.csv" \
    2>"$out/$w.import.log"
  python3 bench/kernels/summarize_dsa_stalls.py "$out/$w.sass.csv" >"$out/$w.phases.json" &&
    cat "$out/$w.phases.json"
done
