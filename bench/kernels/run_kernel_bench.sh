#!/usr/bin/env bash
# The performance evidence of a kernel-library operator, in one run on one GPU, from the
# repository root after a build (build/default/kh and libkh_worker.so):
#   1. kh ceilings: the machine's copy bandwidth (including copies of decode-sized buffers, the
#      floor a memory-bound call of that many bytes can reach), GEMM rates and the empty-kernel
#      span, into OUT/ceilings.json (and the full report, OUT/ceilings_report.json);
#   2. bench/baselines/run_baselines.sh OUT DEFINITION with those ceilings: the library entry
#      (kernels/<op>/), every baseline of the definition and its PyTorch reference, interleaved per
#      workload, one sweep per timer (KH_TIMERS, default "cupti graph") at the official counts.
#      The PyTorch reference is left out of the timed sweeps (KH_REFERENCE_UNTIMED, default this
#      definition): GDN decode's loops over (batch, head) in Python, about 30 ms a call at batch
#      64, so timing it at the official counts takes many minutes and says nothing about kernels.
# Summarise with the operator's bench/kernels/summarize_<op>.py.
#
# Usage: bench/kernels/run_kernel_bench.sh OUT_DIR DEFINITION
set -u
out=${1:?usage: bench/kernels/run_kernel_bench.sh OUT_DIR DEFINITION}
definition=${2:?usage: bench/kernels/run_kernel_bench.sh OUT_DIR DEFINITION}
kh=${KH:-build/default/kh}
mkdir -p "$out"
"$kh" ceilings --json --out "$out/ceilings.json" >"$out/ceilings_report.json" 2>"$out/ceilings.log" ||
  { echo "kh ceilings failed: $(tail -1 "$out/ceilings.log")" >&2; exit 1; }
KH_CEILINGS="$out/ceilings.json" KH_REFERENCE_UNTIMED=${KH_REFERENCE_UNTIMED:-$definition} \
  "$(dirname "$0")/../baselines/run_baselines.sh" "$out" "$definition"
