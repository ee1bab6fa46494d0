#!/bin/bash
# GDN prefill routes on one GPU: one interleaved cupti sweep (official counts 1/5/3, all 100
# official workloads, cold L2) of the routes (P, default kernels/gdn_prefill) and knob variants
# of it that turn a route off (serial for every call, context-parallel off, 16 lanes, one token
# per round), against BASE if given (a folder; the previous kernel, e.g. a checkout's
# kernels/gdn_prefill). bench/results/2026-12-01_gdn_prefill_routes_h200.json was made at commit
# a876a12, where P was candidates/gdn_prefill and BASE the library's chunked-only kernel.
# Writes OUT/sweep12_results.json (per candidate: params and per-workload status and latency),
# OUT/gpu.txt and OUT/sweep.log. Usage: OUT=DIR [P=folder] [BASE=folder] [KH=path/to/kh]
# bench/kernels/run_gdn_prefill_routes.sh
set -u
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH KH_MEMORY_DIR=
KH=${KH:-$PWD/build/default/kh}; O=${OUT:?set OUT}; t0=$(date +%s); C=/tmp/khcache; S=/tmp/store12
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/gpu.txt 2>&1
P=${P:-kernels/gdn_prefill}
timeout 420 $KH sweep ${BASE:-} $P $P@SERIAL_MAX_TOKENS=1000000000 $P@CP_MAX_GROUPS=0 $P@SERIAL_LANES=16 $P@SERIAL_ROUND=1 --backend cuda --timing cupti --trials 1 --cache $C --store $S --call-timeout 60 --json > /tmp/sweep12.json 2> $O/sweep.log
echo "sweep rc=$? $(( $(date +%s) - t0 ))s"; tail -c 300 $O/sweep.log
bench/kernels/sweep_results.py $KH $S $O/sweep12_results.json
echo "done $(( $(date +%s) - t0 ))s"
