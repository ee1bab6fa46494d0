#!/usr/bin/env bash
# Every definition's baselines beside its current candidate, interleaved, on a GPU machine from
# the repository root after a build (build/default/kh and libkh_worker.so); how every kernel issue
# proves its speed. For each definition:
#   candidates  the kernel library's entry (kernels/<op>/ whose definition it is, else the example
#               in examples/<definition>/), every baselines/*/*/ of that definition, and the
#               definition's own PyTorch reference (builtin:definition_reference) except where a
#               call takes about a second (GDN prefill: correctness-only, judged in the GPU tests);
#   sweeps      one `kh sweep` per timer (cupti: the official-aligned span; graph: CUDA-graph
#               replay), candidates interleaved per workload, 1 strict correctness trial each,
#               then the timer at the definition's official counts, into a fresh store;
#   per sweep   `kh show --json` of each candidate and `kh report` (Markdown, plots).
# Python baselines need their PyPI packages importable by python3 (baselines/README.md).
# Summarise with bench/baselines/summarize_baselines.py OUT_DIR RESULT.json COMMIT; the result is
# bench/results/<date>-baselines.json.
#
# Usage: bench/baselines/run_baselines.sh OUT_DIR [DEFINITION...]   (default: all five)
#   KH_TIMERS="cupti graph" (default) picks the timers; KH_WORKLOADS_STRIDE=k sweeps every k-th
#   workload of each definition (default 1: the full official set); KH_SWEEP_ARGS="..." adds kh sweep
#   options (e.g. "--call-timeout 60" for peers whose first call autotunes); KH_BACKEND=cpu KH_TIMERS=wall
#   rehearses the script without a GPU (the torch baselines then fail to load);
#   KH_REFERENCE_UNTIMED="DEF..." leaves those definitions' PyTorch references out of the sweeps
#   (default: GDN prefill); KH_CEILINGS=FILE (kh ceilings' output for this GPU) puts each
#   workload's roofline floor beside its latency.
set -u
out=${1:?usage: bench/baselines/run_baselines.sh OUT_DIR [DEFINITION...]}
shift
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
timers=${KH_TIMERS:-cupti graph}
stride=${KH_WORKLOADS_STRIDE:-1}
backend=${KH_BACKEND:-cuda}
ceilings=()
[ -n "${KH_CEILINGS:-}" ] && ceilings=(--ceilings "$KH_CEILINGS")
correctness_only=${KH_REFERENCE_UNTIMED:-gdn_prefill_qk4_v8_d128_k_last}
export KH_MEMORY_DIR=  # a fresh store: only this run's results
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
: >"$out/steps.txt"
store="$out/store"

definitions=("$@")
if [ ${#definitions[@]} -eq 0 ]; then
  for f in definitions/*/*.json; do definitions+=("$(basename "$f" .json)"); done
fi

# The folders under $1 whose candidate.toml names definition $2.
candidates_of() {
  grep -l "^definition *= *\"$2\"" $1/candidate.toml 2>/dev/null | xargs -r -n1 dirname
}

for def in "${definitions[@]}"; do
  entry=$(candidates_of "kernels/*" "$def" | head -1)
  [ -n "$entry" ] || entry="examples/$def"
  cands=("$entry" $(candidates_of "baselines/*/*" "$def"))
  case " $correctness_only " in *" $def "*) ;; *) cands+=(builtin:definition_reference) ;; esac
  op_type=$(basename "$(dirname "$(ls definitions/*/"$def".json)")")
  workloads="$out/workloads_$def.jsonl"
  awk -v k="$stride" '(NR - 1) % k == 0' "workloads/$op_type/$def.jsonl" >"$workloads"
  for timer in $timers; do
    name="${def}_${timer}"
    start=$(date +%s.%N)
    "$kh" sweep "${cands[@]}" -d "$def" --workloads "$workloads" --backend "$backend" --timing "$timer" \
      --trials 1 "${ceilings[@]}" ${KH_SWEEP_ARGS:-} --cache "$cache" --logs "$out/logs" --store "$store" --json \
      >"$out/sweep_$name.json" 2>"$out/sweep_$name.log"
    status=$?
    echo "$name $status $(python3 -c "import time; print(round(time.time() - $start, 1))")" |
      tee -a "$out/steps.txt"
    sweep=$(python3 -c "import json; print(json.load(open('$out/sweep_$name.json'))['sweep'])" 2>/dev/null) || continue
    python3 -c "import json; [print(c['hash']) for c in json.load(open('$out/sweep_$name.json'))['candidates']]" |
      while read -r hash; do
        "$kh" show "$hash" --sweep "$sweep" --store "$store" --json \
          >"$out/show_${name}_${hash:0:12}.json" 2>>"$out/sweep_$name.log"
      done
    "$kh" report "$def" --sweep "$sweep" --store "$store" --out "$out/report_$name" \
      >>"$out/sweep_$name.log" 2>&1
  done
done
"$kh" store export --store "$store" -o "$out/baselines.khb" >>"$out/steps.txt" 2>&1
