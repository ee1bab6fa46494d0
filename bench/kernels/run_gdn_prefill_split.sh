#!/bin/bash
# The split GDN prefill route on one GPU: the strict correctness run of P (default
# kernels/gdn_prefill; bench/kernels/run_correctness.sh, TRIALS per official workload and per
# extra shape and variant), then one interleaved cupti sweep (official counts 1/5/3, all 100
# official workloads, cold L2) of BASE (the previous kernel, a folder, if given), P with the split
# route, P with it off (SPLIT_MAX_CHAINS=0: the routes before it), and P's split knobs
# (CHAIN_MAX_SLABS=8, PREP_WARPS=4). Writes OUT/sweep_results.json (per
# candidate: params and per-workload status and latency), OUT/correctness_summary.txt,
# OUT/gpu.txt and OUT/sweep.log.
# Usage: OUT=DIR [P=folder] [BASE=folder] [TRIALS=2] [KH=path/to/kh]
# bench/kernels/run_gdn_prefill_split.sh
set -u
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH KH_MEMORY_DIR=
KH=${KH:-$PWD/build/default/kh}; O=${OUT:?set OUT}; t0=$(date +%s); C=/tmp/khcache; S=/tmp/store_split
P=${P:-kernels/gdn_prefill}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/gpu.txt 2>&1
KH=$KH KH_CACHE=$C KH_EVAL_TIMEOUT=150 bench/kernels/run_correctness.sh /tmp/correctness $P ${TRIALS:-2} > /tmp/correctness.log 2>&1
cp /tmp/correctness/summary.txt $O/correctness_summary.txt
echo "correctness $(( $(date +%s) - t0 ))s"; cat $O/correctness_summary.txt
timeout ${SWEEP_TIMEOUT:-380} $KH sweep ${BASE:-} $P $P@SPLIT_MAX_CHAINS=0 $P@CHAIN_MAX_SLABS=8 $P@PREP_WARPS=4 --backend cuda --timing cupti --trials 1 --cache $C --store $S --call-timeout 60 --json > /tmp/sweep_split.json 2> $O/sweep.log
echo "sweep rc=$? $(( $(date +%s) - t0 ))s"; tail -c 300 $O/sweep.log
bench/kernels/sweep_results.py $KH $S $O/sweep_results.json
echo "done $(( $(date +%s) - t0 ))s"
