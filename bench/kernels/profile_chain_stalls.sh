#!/usr/bin/env bash
# What a GDN prefill chain step waits on: Nsight Compute's warp-state sampling (every 32 cycles)
# of the small-chunk decoupled kernel on official workloads, SASS-level, then
# summarize_chain_stalls.py groups the samples by role (a role's instructions execute
# CTAs x warps x chunks times) and by stall reason. Made
# bench/results/2026-12-05_gdn_prefill_chain_profile_h100.json.
# Usage: OUT=DIR [KH=path/to/kh] bench/kernels/profile_chain_stalls.sh [WORKLOAD_UUID ...]
#   (default: 134 x 1 and 2040 x 2; needs ncu and a GPU; the build cache is KH_CACHE)
set -u
cd "$(dirname "$0")/../.."
out=${OUT:?set OUT}
kh=${KH:-$PWD/build/default/kh}
mkdir -p "$out"
[ $# -gt 0 ] || set -- ba08a83e-e151-4e16-bc70-abee6851604c c358edcd-3fda-43bb-98a2-ac32da9038b6
for w in "$@"; do
  timeout 300 ncu --clock-control none --target-processes all -k regex:small_chunk_decoupled -c 1 \
    --section SourceCounters --section WarpStateStats --section LaunchStats --section SpeedOfLight \
    --warp-sampling-interval 0 --import-source no -f -o "$out/$w" \
    "$kh" eval kernels/gdn_prefill -w "$w" --backend cuda --trials 1 --official \
    --cache "${KH_CACHE:-/tmp/khcache}" >"$out/$w.log" 2>&1
  echo "$w: ncu rc=$?"
  ncu --import "$out/$w.ncu-rep" --page details --csv >"$out/$w.details.csv" 2>&1
  ncu --import "$out/$w.ncu-rep" --page source --csv --print-source=sass >"$out/$w.sass.csv" 2>&1
  python3 bench/kernels/summarize_chain_stalls.py "$out/$w.sass.csv"
done
