#!/usr/bin/env python3
"""The candidate-against-library comparisons of several bench/kernels/run_candidate_vs_library.sh
runs as one committed result: for each run and candidate that run's `kh compare --json` of the
library entry (A) against the candidate (B) (OUT/compare_<name>_<hash>.json, one interleaved
sweep, so A and B are paired: per-workload latencies and speedup A / B, geometric means per kh
regime and overall), with the run's correctness summary (OUT/correctness/summary.txt) and its
promotion decision when given.

Usage: bench/kernels/summarize_compares.py SPEC.json OUT.json
  SPEC: {"what", "machine", "commit", "command", "timing", "notes": {...},
         "runs": [{"name", "out": OUT_DIR, "promote": promote.json or null, "what",
                   "candidates": {hash12: description}}]}
"""
import json
import os
import re
import sys


def compact(compare):
    """kh compare's JSON, latencies in microseconds, the regimes by label."""
    labels = {r["regime"]: r["label"] for r in compare["regimes"]}
    return {
        "geomean_speedup": round(compare["geomean_speedup"], 4),
        "compared": compare["compared"],
        "regimes": {r["label"]: {"workloads": r["compared"],
                                 **{k: round(r[k], 4)
                                    for k in ("geomean_speedup", "min_speedup", "max_speedup")}}
                    for r in compare["regimes"] if r["compared"]},
        "workloads": [{"workload": w["workload"], "regime": labels[w["regime"]],
                       "library_us": round(w["a"] * 1e6, 2), "candidate_us": round(w["b"] * 1e6, 2),
                       "speedup": round(w["speedup"], 4)}
                      for w in compare["workloads"] if w.get("a") and w.get("b")],
    }


def main():
    spec_path, out_path = sys.argv[1:3]
    spec = json.load(open(spec_path))
    runs = []
    for run in spec["runs"]:
        out = run["out"]
        entry = {"name": run["name"], "what": run["what"], "candidates": {}}
        summary = os.path.join(out, "correctness", "summary.txt")
        if os.path.exists(summary):
            entry["correctness"] = open(summary).read().strip().splitlines()
        if run.get("promote"):
            d = json.load(open(run["promote"]))[0]
            entry["promotion"] = {"candidate": d["candidate"][:12], "decision": d["decision"],
                                  "reason": d["reason"], "evidence": d["evidence"]}
        for name in sorted(os.listdir(out)):
            m = re.match(r"compare_.*_([0-9a-f]{12})\.json$", name)
            if m and m[1] in run["candidates"]:
                entry["candidates"][m[1]] = {"description": run["candidates"][m[1]],
                                             **compact(json.load(open(os.path.join(out, name))))}
        missing = set(run["candidates"]) - set(entry["candidates"])
        if missing:
            raise SystemExit(f"{out}: no compare file for {sorted(missing)}")
        runs.append(entry)
    doc = {k: spec[k] for k in ("what", "machine", "commit", "command", "timing", "notes")}
    doc["date"] = spec.get("date")
    doc["runs"] = runs
    json.dump(doc, open(out_path, "w"), indent=1)
    for r in runs:
        for h, c in r["candidates"].items():
            print(r["name"], h, c["geomean_speedup"], c["description"][:70])


if __name__ == "__main__":
    main()
