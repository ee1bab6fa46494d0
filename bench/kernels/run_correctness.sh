#!/usr/bin/env bash
# The correctness evidence of a kernel-library operator (or of a candidate folder) on a GPU, from
# the repository root after a build: kh eval of kernels/<op>/ (or of the folder) under the strict checks on every official workload, then on the
# extra shapes of tests/data/extra_shapes/<definition>.jsonl under the realistic inputs and every
# adversarial variant of the definition's generator. One JSON per run (kh eval --json) and a line
# per run in OUT/summary.txt: passed / total and the worst errors.
#
# Usage: bench/kernels/run_correctness.sh OUT_DIR OPERATOR [TRIALS] [EXTRA_TRIALS]
#   OPERATOR is the folder name under kernels/ (e.g. gdn_prefill) or a candidate folder's path
#   (e.g. candidates/<name>); TRIALS (default 3) fresh input
#   sets per official workload, EXTRA_TRIALS (default TRIALS) per extra shape and variant.
#   KH_EVAL_TIMEOUT=S bounds each kh eval (default 600 s).
set -u
out=${1:?usage: bench/kernels/run_correctness.sh OUT_DIR OPERATOR [TRIALS] [EXTRA_TRIALS]}
op=${2:?usage: bench/kernels/run_correctness.sh OUT_DIR OPERATOR [TRIALS] [EXTRA_TRIALS]}
trials=${3:-3}
extra_trials=${4:-$trials}
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
limit=${KH_EVAL_TIMEOUT:-600}
mkdir -p "$out"
dir=$op
[ -f "$dir/candidate.toml" ] || dir="kernels/$op"
def=$(sed -n 's/^definition *= *"\(.*\)"/\1/p' "$dir/candidate.toml")
extra="tests/data/extra_shapes/$def.jsonl"
variants=$("$kh" validate --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
for x in d.get('definitions', []):
    if x.get('definition') == '$def':
        print(' '.join(x.get('variants', [])))")
summarize() {  # name json
  python3 - "$1" "$2" <<'PY' | tee -a "$out/summary.txt"
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{name}: no result ({e})"); sys.exit()
rs = d.get("results", [])
ok = sum(r.get("status") == "PASSED" for r in rs)
worst = max((r.get("max_absolute_error") or 0 for r in rs), default=0)
bad = [f"#{r.get('index')} {r.get('status')}: {str(r.get('message', ''))[:160]}" for r in rs
       if r.get("status") != "PASSED"]
print(f"{name}: {ok}/{len(rs)} passed, {d.get('trials')} trials, worst abs error {worst:.3g}"
      + ("; " + " | ".join(bad[:3]) if bad else ""))
PY
}
run() {  # name args...
  local name=$1; shift
  timeout "$limit" "$kh" eval "$dir" --backend cuda --cache "$cache" --json "$@" \
    >"$out/$name.json" 2>"$out/$name.log"
  summarize "$name" "$out/$name.json"
}
: >"$out/summary.txt"
run official --trials "$trials"
if [ -f "$extra" ]; then
  run extra --workloads "$extra" --trials "$extra_trials"
  for v in $variants; do run "extra_$v" --workloads "$extra" --trials "$extra_trials" --variant "$v"; done
fi
