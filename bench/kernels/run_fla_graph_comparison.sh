#!/bin/bash
# GDN prefill against fla at its best case, on one GPU: kernels/gdn_prefill under the cupti span
# (official counts) on all 100 official workloads, then kernels/gdn_prefill and fla 0.6.0 with a
# device-built chunk table (baselines/fla/gdn_prefill_graph) interleaved under CUDA graph replay,
# workloads in regime order (8192 tokens first, then <= 2 long sequences, 257-8191, <= 256) so
# that a run cut short still covers the issues' regimes. fla must be importable (the device
# README: fla_core-0.6.0 as a wheel in .whl, installed into PYTHONPATH).
# Writes OUT/fla_graph_results.json (per timer and candidate, per workload status and latency) and
# the sweep logs; bench/results/2026-12-01_gdn_prefill_fla_graph_h200.json was made from it.
# REGIMES (default "0 1 2 3": 8192 tokens, <= 2 long sequences, 257-8191, <= 256) sets that order.
# Usage: OUT=DIR [KH=path/to/kh] [BUDGET_S=330] [REGIMES="1 2 0 3"]
# bench/kernels/run_fla_graph_comparison.sh
set -u
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH KH_MEMORY_DIR=
KH=${KH:-$PWD/build/default/kh}; O=${OUT:?set OUT}; t0=$(date +%s); C=${KH_CACHE:-/tmp/khcache}
deadline=$((t0 + ${BUDGET_S:-330}))
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/gpu.txt 2>&1
W=$O/workloads_by_regime.jsonl
python3 - workloads/gdn/gdn_prefill_qk4_v8_d128_k_last.jsonl $W "${REGIMES:-0 1 2 3}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
order = [int(x) for x in sys.argv[3].split()]
def regime(r):
    a = r["workload"]["axes"]; t, n = a["total_seq_len"], a["num_seqs"]
    return 0 if t == 8192 else 1 if n <= 2 and t >= 1024 else 2 if t > 256 else 3
with open(sys.argv[2], "w") as f:
    for r in sorted(rows, key=lambda r: order.index(regime(r))): f.write(json.dumps(r) + "\n")
PY
timeout 120 $KH sweep kernels/gdn_prefill --workloads $W --backend cuda --timing cupti --trials 1 --cache $C --store $O/store_cupti --call-timeout 60 --json > $O/cupti.json 2> $O/cupti.log
echo "cupti rc=$? $(( $(date +%s) - t0 ))s"
timeout $(( deadline - $(date +%s) )) $KH sweep kernels/gdn_prefill baselines/fla/gdn_prefill_graph --workloads $W --backend cuda --timing graph --trials 1 --cache $C --store $O/store_graph --call-timeout 120 --workload-timeout 200 --json > $O/graph.json 2> $O/graph.log
echo "graph rc=$? $(( $(date +%s) - t0 ))s"
python3 - $KH $O <<'PY'
import json, subprocess, sys
kh, out = sys.argv[1:3]
res = {}
for timer in ("cupti", "graph"):
    store = f"{out}/store_{timer}"
    hist = subprocess.run([kh, "history", "--store", store, "--json"], capture_output=True, text=True).stdout
    for c in json.loads(hist or "[]"):
        show = json.loads(subprocess.run([kh, "show", c["hash"], "--store", store, "--json"], capture_output=True, text=True).stdout)
        res[f'{timer}:{c["name"]}:{c["hash"][:12]}'] = [{"workload": r["workload"], "status": r["status"], "latency_seconds": r.get("latency_seconds"), "message": (r.get("message") or "")[:200]} for r in show["results"]]
json.dump(res, open(out + "/fla_graph_results.json", "w"))
for k, v in res.items():
    ok = [r["latency_seconds"] for r in v if r["status"] == "PASSED" and r["latency_seconds"]]
    print(k, len(v), "passed", len(ok), "mean_us", round(1e6 * sum(ok) / max(1, len(ok)), 2))
PY
echo "done $(( $(date +%s) - t0 ))s"
