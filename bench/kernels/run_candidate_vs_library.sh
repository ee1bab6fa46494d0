#!/usr/bin/env bash
# A kernel candidate under development (candidates/<name>/) against the library entry of its
# definition (kernels/<op>/), in one run on one GPU, from the repository root after a build:
#   0. kh build of the library entry, the candidate and every knob setting at once (in parallel);
#   1. correctness: bench/kernels/run_correctness.sh on the candidate (every official workload,
#      the extra shapes under the realistic inputs and every adversarial variant);
#   2. one interleaved kh sweep (cupti at the official counts, cold L2) of the library entry, the
#      candidate, and the candidate at each knob setting given, on every official workload (or
#      the workloads of KH_WORKLOADS=FILE);
#   3. kh show --json per candidate (OUT/show_<name>.json), kh compare of each against the library
#      entry (OUT/compare_<name>_<hash>.txt, and .json for bench/kernels/summarize_compares.py)
#      and kh report (OUT/report/report.md, regimes included); OUT/variants.txt says which hash
#      is which folder@knobs.
# The store (OUT/store) keeps the results; its blobs are dropped at the end to keep OUT small.
#
# Usage: bench/kernels/run_candidate_vs_library.sh OUT_DIR CANDIDATE_DIR [NAME=value,NAME=value ...]
#   KH_TRIALS correctness trials (default 3; 0 skips step 1, for knob sweeps of a copy of the
#   library entry, which its promotion already checked); KH_SWEEP_ARGS extra kh sweep arguments.
set -u
# A fresh store: only this run's candidates in kh history, the compares and the report (with the
# memory/ bundles imported, every candidate ever stored came along, with its old results).
export KH_MEMORY_DIR=
out=${1:?usage: bench/kernels/run_candidate_vs_library.sh OUT_DIR CANDIDATE_DIR [KNOBS...]}
cand=${2:?usage: bench/kernels/run_candidate_vs_library.sh OUT_DIR CANDIDATE_DIR [KNOBS...]}
shift 2
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
store="$out/store"
mkdir -p "$out"
def=$(sed -n 's/^definition *= *"\(.*\)"/\1/p' "$cand/candidate.toml")
library=$(grep -l "^definition *= *\"$def\"" kernels/*/candidate.toml | head -1 | xargs -r dirname)
[ -n "$def" ] && [ -n "$library" ] ||
  { echo "$cand/candidate.toml: no definition, or no kernels/*/ of definition \"$def\"" >&2; exit 2; }

cands=("$library" "$cand")
for knobs in "$@"; do cands+=("$cand@$knobs"); done
# Every variant compiled at once into the cache the steps below read (one nvcc per core; the
# sweep would compile them one after another, ~45 s each for GDN prefill on a fresh machine).
# A variant that fails to compile is reported by the sweep; here it only costs the wait.
"$kh" build "${cands[@]}" --cache "$cache" --jobs 0 >"$out/build.log" 2>&1
echo "build rc=$? ($(grep -c '^built\|^cached' "$out/build.log") of ${#cands[@]} ready)"

[ "${KH_TRIALS:-3}" = 0 ] ||
  "$(dirname "$0")/run_correctness.sh" "$out/correctness" "$cand" "${KH_TRIALS:-3}"
workloads=()
[ -n "${KH_WORKLOADS:-}" ] && workloads=(--workloads "$KH_WORKLOADS")
# shellcheck disable=SC2086  # KH_SWEEP_ARGS is a list of arguments
"$kh" sweep "${cands[@]}" "${workloads[@]}" --backend cuda --timing cupti --trials 1 \
  --cache "$cache" --store "$store" --json ${KH_SWEEP_ARGS:-} >"$out/sweep.json" 2>"$out/sweep.log"
echo "sweep rc=$? ($(tail -c 300 "$out/sweep.log" | tr '\n' ' '))"

# Which hash is which of the swept candidates (knob variants share the candidate's name), in the
# sweep's order: OUT/variants.txt, one "hash folder[@knobs]" line each.
python3 - "$out/sweep.json" "${cands[@]}" >"$out/variants.txt" <<'PY'
import json, sys
swept = json.load(open(sys.argv[1])).get("candidates", [])
for c, spec in zip(swept, sys.argv[2:]):
    print(c["hash"][:12], spec)
PY
cat "$out/variants.txt"

"$kh" history --store "$store" --json >"$out/history.json" 2>/dev/null
python3 - "$out/history.json" >"$out/candidates.txt" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1])):
    print(c["hash"][:12], c["name"])
PY
# The library entry's candidate hash (its name may be the candidate's: a next version keeps it).
base_hash=$("$kh" retained "$def" --source "$library" --store "$store" --json 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["source_hash"][:12])')
while read -r hash name; do
  "$kh" show "$hash" --store "$store" --json >"$out/show_${name}_$hash.json" 2>/dev/null
  if [ "$hash" != "$base_hash" ]; then
    "$kh" compare "$base_hash" "$hash" --store "$store" >"$out/compare_${name}_$hash.txt" 2>&1
    "$kh" compare "$base_hash" "$hash" --store "$store" --json >"$out/compare_${name}_$hash.json" \
      2>/dev/null
  fi
done <"$out/candidates.txt"
"$kh" report "$def" --store "$store" --out "$out/report" >/dev/null 2>&1
rm -rf "$store/blobs"
