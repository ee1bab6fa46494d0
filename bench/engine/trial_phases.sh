#!/usr/bin/env bash
# Where a strict correctness trial's wall time goes on the cuda backend: `kh eval --json`'s
# trial_phase_seconds (inputs, reference, calls, checks, worker round trips) for one candidate on
# a few official workloads, one JSON with the machine and the kh commit. Run it on two builds of
# kh to see what a harness change buys; bench/results/2026-12-01_trial_phases_h200.json compares
# commit a876a12 (outputs and references brought to the host) with f3ceda1 (judged on the GPU).
#
# Usage (GPU machine, repository root, after a build):
#   OUT=DIR [KH=build/default/kh] [CANDIDATE=kernels/gdn_prefill] [TRIALS=10] \
#     bench/engine/trial_phases.sh W [W ...]      (W: workload indices of the definition's set)
set -u
out=${OUT:?set OUT}; kh=${KH:-build/default/kh}; candidate=${CANDIDATE:-kernels/gdn_prefill}
trials=${TRIALS:-10}; cache=${KH_CACHE:-/tmp/khcache}
[ $# -gt 0 ] || { echo "usage: OUT=DIR bench/engine/trial_phases.sh W [W ...]" >&2; exit 2; }
mkdir -p "$out"
for w in "$@"; do
  KH_MEMORY_DIR= "$kh" eval "$candidate" -w "$w" --backend cuda --trials "$trials" --json \
    --cache "$cache" --no-store > "$out/phases_$w.json" 2> "$out/phases_$w.log" ||
    echo "workload $w: kh eval exited $? (see $out/phases_$w.log)" >&2
done
python3 - "$out" "$candidate" "$trials" "$@" <<'PY'
import json, subprocess, sys
out, candidate, trials, indices = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
rows = []
for w in indices:
    try:
        r = json.load(open(f"{out}/phases_{w}.json"))["results"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        rows.append({"index": int(w), "error": str(e)}); continue
    rows.append({"index": int(w), "axes": r["axes"], "status": r["status"], "trials": r["trials_run"],
                 "seconds": r["seconds"], "trial_phase_seconds": r["trial_phase_seconds"],
                 "ms_per_trial": round(1e3 * r["seconds"] / max(1, r["trials_run"]), 2)})
json.dump({"gpu": gpu, "commit": commit, "candidate": candidate, "trials": trials,
           "method": "kh eval --backend cuda --trials N --json (strict checks), wall seconds by phase",
           "workloads": rows}, open(f"{out}/trial_phases.json", "w"), indent=1)
for r in rows: print(r)
PY
