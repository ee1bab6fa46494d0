#!/usr/bin/env bash
# A paired, interleaved comparison of two candidates on one GPU, as a committed result: kh gate
# (B against A, rounds x pairs per workload, randomised order, bootstrap intervals, Holm across
# workloads) on the definition's official workloads and, optionally, on an extra workloads file.
# Writes OUT/NAME_official.json, OUT/NAME_extra.json, OUT/gpu.txt and the store as OUT/NAME.khb;
# bench/kernels/summarize_gates.py turns a folder of them into one bench/results file.
#
# Usage: bench/kernels/run_gate.sh OUT NAME CANDIDATE_B CANDIDATE_A [EXTRA_WORKLOADS.jsonl]
#   e.g. bench/kernels/run_gate.sh out/gates tma kernels/dsa_attention old/dsa_attention \
#        tests/data/extra_shapes/dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64.jsonl
set -u
out=${1:?usage: run_gate.sh OUT NAME CANDIDATE_B CANDIDATE_A [EXTRA_WORKLOADS]}
name=${2:?name}
b=${3:?candidate B}
a=${4:?candidate A}
extra=${5:-}
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
timing=${KH_TIMING:-cupti}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
export KH_MEMORY_DIR=  # a fresh store: only this run's results
status=0
"$kh" gate "$b" --against "$a" --workloads all --backend cuda --timing "$timing" --cache "$cache" \
  --store "$out/store_$name" --json >"$out/${name}_official.json" 2>"$out/${name}_official.log" ||
  status=$?
if [ -n "$extra" ]; then
  "$kh" gate "$b" --against "$a" --workloads "$extra" --backend cuda --timing "$timing" \
    --cache "$cache" --store "$out/store_$name" --json >"$out/${name}_extra.json" \
    2>"$out/${name}_extra.log" || status=$?
fi
"$kh" store export --store "$out/store_$name" -o "$out/$name.khb" >/dev/null 2>&1
exit $status
