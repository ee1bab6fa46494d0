#!/usr/bin/env python3
"""The candidate-against-library comparisons of several bench/kernels/run_candidate_vs_library.sh
runs as one committed result: for each run and candidate the per-workload latencies of the library
entry (A) and the candidate (B) from that run's `kh compare` text (OUT/compare_<name>_<hash>.txt,
one interleaved sweep, so A and B are paired), the geometric-mean speedup A / B per kh regime and
overall, and the run's correctness summary (OUT/correctness/summary.txt) and promotion decision
when given.

Usage: bench/kernels/summarize_compares.py SPEC.json OUT.json
  SPEC: {"what", "machine", "commit", "command", "timing", "notes": {...},
         "runs": [{"name", "out": OUT_DIR, "promote": promote.json or null, "what",
                   "candidates": {hash12: description}}]}
"""
import json
import math
import os
import re
import sys

ROW = re.compile(r"^\s*(\d+)\s+([0-9a-f]{8})\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x\s+(.*)$")


def parse_compare(path):
    rows = []
    for line in open(path):
        m = ROW.match(line)
        if m:
            rows.append({"index": int(m[1]), "workload": m[2], "library_us": float(m[3]),
                         "candidate_us": float(m[4]), "regime": m[6].strip()})
    return rows


def geomean(xs):
    return round(math.exp(sum(math.log(x) for x in xs) / len(xs)), 4) if xs else None


def summarize(rows):
    by = {}
    for r in rows:
        by.setdefault(r["regime"], []).append(r["library_us"] / r["candidate_us"])
    return {"overall": geomean([r["library_us"] / r["candidate_us"] for r in rows]),
            "regimes": {g: {"workloads": len(v), "speedup": geomean(v)} for g, v in sorted(by.items())}}


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
            m = re.match(r"compare_.*_([0-9a-f]{12})\.txt$", name)
            if not m or m[1] not in run["candidates"]:
                continue
            rows = parse_compare(os.path.join(out, name))
            entry["candidates"][m[1]] = {"description": run["candidates"][m[1]],
                                         "speedup_over_library": summarize(rows), "workloads": rows}
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
            print(r["name"], h, c["speedup_over_library"]["overall"], c["description"][:70])


if __name__ == "__main__":
    main()
