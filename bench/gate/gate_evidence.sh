#!/usr/bin/env bash
# Issue 6's GPU evidence for the promotion discipline, on a GPU machine from the repository root
# after a build, into a fresh store (OUT_DIR/store):
#  aa    kh noise of the GDN decode test candidate (FAULT=none) over the full official set; then
#        kh promote of it, the definition's first candidate, which makes it the retained baseline
#        (correctness, and a replay cut to 10 trials per workload for device time: --replay-trials
#        10 is recorded with the decision), and kh promote of the same candidate again: an A/A
#        gate that must not promote, its interval containing zero change;
#  slow  kh promote of FAULT=extra_output_pass (the same kernel plus an extra pass over its output)
#        against it, and kh gate of it over every workload: it must be found a loss;
#  ties  the top-k test candidate with FAULT=duplicate_on_ties (a duplicate index when scores tie
#        at the cut): a 3-trial sweep on a subset of the official set (every 16th workload, for
#        device time) passes; kh promote, whose 100-trial replay adds the generator's adversarial
#        inputs (20 trials each), must reject it.
# Every kh call's JSON and log land in OUT_DIR; summarise with
# bench/gate/summarize_gate_evidence.py OUT_DIR RESULT.json COMMIT.
#
# Usage: bench/gate/gate_evidence.sh OUT_DIR [aa] [slow] [ties]   (default: all three, in order)
set -u
out=${1:?usage: bench/gate/gate_evidence.sh OUT_DIR [aa] [slow] [ties]}
shift
parts=${*:-aa slow ties}
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
export KH_MEMORY_DIR=  # a fresh store: only this run's results
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
common=(--backend cuda --cache "$cache" --logs "$out/logs" --store "$out/store")
gdn=tests/candidates/gdn_decode_cuda
topk=tests/candidates/dsa_topk_indexer_cuda

# step NAME kh-args...: runs kh with the common flags and --json, keeps stdout, stderr, status
# and wall seconds.
step() {
  local name=$1
  shift
  local start=$(date +%s.%N)
  "$kh" "$@" "${common[@]}" --json >"$out/$name.json" 2>"$out/$name.log"
  local status=$?
  echo "$name $status $(python3 -c "import time; print(round(time.time() - $start, 1))")" |
    tee -a "$out/steps.txt"
}

for part in $parts; do
  case $part in
    aa)
      step noise noise "$gdn@FAULT=none"
      step promote_first promote "$gdn@FAULT=none" --replay-trials 10 --adversarial-trials 2
      step promote_aa promote "$gdn@FAULT=none"
      ;;
    slow)
      step promote_slow promote "$gdn@FAULT=extra_output_pass"
      step gate_slow gate "$gdn@FAULT=extra_output_pass" --against retained --workloads all
      ;;
    ties)
      def=dsa_topk_indexer_fp8_h64_d128_topk2048_ps64
      awk 'NR % 16 == 1' "workloads/dsa_paged/$def.jsonl" >"$out/topk_subset.jsonl"
      step ties_sweep3 sweep "$topk@FAULT=duplicate_on_ties" --workloads "$out/topk_subset.jsonl" \
        --trials 3
      step promote_ties promote "$topk@FAULT=duplicate_on_ties" --workloads "$out/topk_subset.jsonl"
      ;;
    *) echo "unknown part $part (aa, slow, ties)" >&2; exit 2 ;;
  esac
done
"$kh" store export --store "$out/store" -o "$out/gate_evidence.khb"
