#!/usr/bin/env bash
# GPU validation of the evaluation engine, run on a GPU machine from the repository root after a
# build (build/default): the device generator and GPU references against the host (gtest, label
# gpu), the CUDA planted faults, then every example candidate on every official workload with
# kh's strict checks, and a timing of GPU-reference against CPU-reference evaluation on the same
# MoE workloads. Everything lands in OUT_DIR (logs, gtest JSON, kh eval JSON); summarise with
# bench/summarize_gpu_validation.py.
#
# Usage: bench/gpu_validation.sh OUT_DIR [TRIALS] [all|tests|evals]
# (the stages can run in separate sessions into the same OUT_DIR)
set -u
out=${1:?usage: bench/gpu_validation.sh OUT_DIR [TRIALS] [all|tests|evals]}
trials=${2:-1}
stage=${3:-all}
kh=build/default/kh
cache=build/test-build-cache
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
nvcc --version | tail -2 >"$out/nvcc.txt" 2>&1
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null || echo unknown >"$out/commit.txt"

if [ "$stage" != evals ]; then
for t in gpu_generator_test gpu_reference_test; do
  build/default/tests/$t --gtest_output=json:"$out/$t.json" >"$out/$t.log" 2>&1
  echo "$t exit $?"
done
build/default/tests/gpu_eval_test --gtest_filter='GpuFaults.*' \
  --gtest_output=json:"$out/gpu_eval_test.json" >"$out/gpu_eval_test.log" 2>&1
echo "gpu_eval_test (faults) exit $?"
fi
[ "$stage" = tests ] && exit 0

for dir in examples/*/; do
  def=$(basename "$dir")
  "$kh" eval "$dir" --backend cuda --trials "$trials" --json --cache "$cache" \
    --logs "$out/logs" >"$out/eval_$def.json" 2>"$out/eval_$def.log"
  echo "eval $def exit $?"
done

# The same MoE workloads (<= 100 tokens, where the single-threaded CPU reference is affordable) judged by the GPU
# reference and by the CPU reference: the evaluation time per workload is the comparison.
moe=examples/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048
ws=$(python3 -c "
import json
for i, l in enumerate(open('workloads/moe/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048.jsonl')):
    if json.loads(l)['workload']['axes']['seq_len'] <= 100: print('-w', i, end=' ')")
for ref in gpu cpu; do
  flag=$([ $ref = cpu ] && echo --cpu-reference)
  # shellcheck disable=SC2086
  "$kh" eval "$moe" --backend cuda --trials 1 --json --cache "$cache" --logs "$out/logs" $flag $ws \
    >"$out/moe_reference_$ref.json" 2>"$out/moe_reference_$ref.log"
  echo "moe with the $ref reference exit $?"
done
