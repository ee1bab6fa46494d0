#!/usr/bin/env python3
"""Paired gates (bench/kernels/run_gate.sh, or kh gate/kh promote --json) as one committed result:
for each gate its candidates, GPU, timer, options and the objective with its interval overall,
per regime and per workload.

Usage: bench/kernels/summarize_gates.py RESULT.json COMMIT WHAT LABEL=GATE [LABEL=GATE...]
  GATE: a gate's JSON, or BUNDLE.khb#STAGE for the gate of that stage (representative, full,
  remeasured) stored in a kh store bundle (kh promote stores each gate as it finishes, so a
  promotion stopped in its replay still has them). GPU.txt (nvidia-smi's "name, driver") is read
  from the folder of the first gate file.
"""
import datetime
import json
import os
import sys


def interval(o):
    return {k: round(o[k], 4) for k in ("estimate", "lo", "hi")}


def load_gate(path):
    if "#" not in path:
        return json.load(open(path))
    bundle, stage = path.rsplit("#", 1)
    for line in open(bundle):
        row = json.loads(line)
        if row.get("t") == "gates" and row["r"]["stage"] == stage:
            g = dict(row["r"])
            result = g.pop("result")
            g.update(json.loads(result) if isinstance(result, str) else result)
            g["options"] = json.loads(g["options"]) if isinstance(g["options"], str) else g["options"]
            return g
    sys.exit(f"{bundle}: no gate of stage {stage!r}")


def gate_summary(path):
    g = load_gate(path)
    return {
        "candidate_a": g["candidate_a"],
        "candidate_b": g["candidate_b"],
        "gpu": g["gpu"],
        "timing_method": g["timing_method"],
        "objective": g["objective"],
        "min_effect": g["min_effect"],
        "options": g["options"],
        "both_correct": g["both_correct"],
        "overall": {"objective": interval(g["overall"]["objective"]), "verdict": g["overall"]["verdict"]},
        "groups": [{"name": x["name"], "objective": interval(x["objective"]), "verdict": x["verdict"]}
                   for x in g["groups"]],
        "workloads": [{"workload": w["workload"], "speedup": interval(w["speedup"]), "verdict": w["verdict"]}
                      for w in g.get("workloads", [])],
    }


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    result, commit, what = sys.argv[1:4]
    gates = dict(arg.split("=", 1) for arg in sys.argv[4:])
    first = next(iter(gates.values())).split("#")[0]
    gpu_txt = os.path.join(os.path.dirname(first), "gpu.txt")
    machine = open(gpu_txt).read().strip() if os.path.exists(gpu_txt) else "unknown"
    out = {
        "what": what,
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": machine,
        "method": "kh gate: B against A interleaved per workload (rounds x pairs, randomised order, "
                  "cupti span with a cold L2 before every call); objective = mean latency of A over "
                  "mean latency of B (above 1: B faster), bootstrap interval, Holm across workloads",
        "gates": {label: gate_summary(path) for label, path in gates.items()},
    }
    with open(result, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for label, g in out["gates"].items():
        print(label, g["overall"])


if __name__ == "__main__":
    main()
