#!/usr/bin/env bash
# A GDN prefill candidate that changes the context-parallel route, in one run on one GPU, from
# the repository root: bench/kernels/run_candidate_vs_library.sh on the official workloads of at
# most 3 sequences and at least 600 tokens (the 16 the route can take; OUT/cp_workloads.jsonl),
# then bench/micro/gdn_cp_timeline.cu of the library, the candidate and the candidate at each knob
# setting (OUT/timeline_<i>.json, i in the order of OUT/timelines.txt). The timeline binaries
# compile while the sweep's variants do (GPU work runs one at a time: the sweep, then each timeline).
#
# Usage: bench/kernels/run_cp_candidate.sh OUT_DIR CANDIDATE_DIR [NAME=value,NAME=value ...]
#   KH, KH_CACHE and KH_TRIALS as for run_candidate_vs_library.sh (KH_TRIALS=0 skips correctness).
set -u
out=${1:?usage: bench/kernels/run_cp_candidate.sh OUT_DIR CANDIDATE_DIR [KNOBS...]}
cand=${2:?usage: bench/kernels/run_cp_candidate.sh OUT_DIR CANDIDATE_DIR [KNOBS...]}
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/timeline_bin"
python3 - workloads/gdn/gdn_prefill_qk4_v8_d128_k_last.jsonl "$out/cp_workloads.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as f:
    for line in open(sys.argv[1]):
        a = json.loads(line)["workload"]["axes"]
        if a["num_seqs"] <= 3 and a["total_seq_len"] >= 600:
            f.write(line)
PY

# Timeline builds: "folder" and "folder NAME=value ..." per line of OUT/timelines.txt.
{ echo "kernels/gdn_prefill"; echo "$cand"
  for knobs in "$@"; do echo "$cand ${knobs//,/ }"; done; } >"$out/timelines.txt"
i=0
while read -r folder params; do
  GDN_PARAMS="$params" GDN_BUILD_ONLY=1 "$here/micro/run_gdn_cp_timeline.sh" "$folder" \
    "$out/timeline_bin/$i" >"$out/timeline_build_$i.log" 2>&1 &
  i=$((i + 1))
done <"$out/timelines.txt"

KH_WORKLOADS="$out/cp_workloads.jsonl" "$here/kernels/run_candidate_vs_library.sh" \
  "$out/sweep" "$cand" "$@"
wait
i=0
while read -r line; do
  if [ -x "$out/timeline_bin/$i/gdn_cp_timeline" ]; then
    timeout 60 "$out/timeline_bin/$i/gdn_cp_timeline" >"$out/timeline_$i.json" 2>"$out/timeline_$i.err"
    echo "timeline $i ($line): rc=$?"
  else
    echo "timeline $i ($line): did not compile (OUT/timeline_build_$i.log)"
  fi
  i=$((i + 1))
done <"$out/timelines.txt"
rm -rf "$out/timeline_bin"
