#!/usr/bin/env python3
"""Summarises a bench/gate/gate_evidence.sh run into one result JSON for bench/results/.

Usage: summarize_gate_evidence.py OUT_DIR RESULT.json COMMIT [FLOORS.json]
FLOORS.json: `kh show <candidate> --json` of a timed sweep of the same kernel, whose per-workload
floor_seconds (the roofline floor of kh's cost model) are printed next to the gate's latencies.
"""
import datetime
import json
import statistics
import sys
from pathlib import Path


def load(out, name):
    path = out / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() and path.stat().st_size else None


def pct(interval):
    return {k: round((interval[k] - 1) * 100, 3) for k in ("estimate", "lo", "hi")}


def gate_summary(gate, floors):
    """Overall and per-regime speedups (as % change of B over A) and per-workload rows."""
    samples = {s["workload"]: s for s in gate.get("samples", [])}
    rows = []
    for w in gate["workloads"]:
        row = {"workload": w["workload"], "change_percent": pct(w["speedup"]), "verdict": w["verdict"]}
        if w["workload"] in floors:
            row["floor_us"] = round(floors[w["workload"]] * 1e6, 3)
        rows.append(row)
    return {
        "objective": gate["objective"],
        "overall_change_percent": pct(gate["overall"]["objective"]),
        "overall_verdict": gate["overall"]["verdict"],
        "regimes": [{"name": g["name"], "change_percent": pct(g["objective"]), "verdict": g["verdict"],
                     "workloads": len(g["workloads"])} for g in gate["groups"]],
        "verdict_counts": {v: sum(1 for w in gate["workloads"] if w["verdict"] == v)
                           for v in ("win", "tie", "loss")},
        "min_effect": gate.get("min_effect"),
        "options": gate.get("options"),
        "workloads": rows,
    }


def main():
    out, result, commit = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    floors = {}
    if len(sys.argv) > 4:
        for r in json.loads(Path(sys.argv[4]).read_text())["results"]:
            if r.get("floor_seconds"):
                floors[r["workload"]] = r["floor_seconds"]
    gpu, driver = [x.strip() for x in (out / "gpu.txt").read_text().split(",")]
    steps = {}
    for line in (out / "steps.txt").read_text().splitlines():
        name, status, seconds = line.split()
        steps[name] = {"exit_status": int(status), "wall_seconds": float(seconds)}

    noise = load(out, "noise")
    promote_first, promote_aa = load(out, "promote_first"), load(out, "promote_aa")
    promote_slow, gate_slow = load(out, "promote_slow"), load(out, "gate_slow")
    ties_sweep, promote_ties = load(out, "ties_sweep3"), load(out, "promote_ties")

    def decision(d):
        return None if not d else {"decision": d[0]["decision"], "reason": d[0]["reason"],
                                   "evidence": d[0]["evidence"],
                                   "replay": d[0].get("replay")}

    doc = {
        "what": "Issue 6 promotion discipline on one H200: noise floor (A/A), A/A promotion is "
                "rejected, a slowed candidate is a loss, a rare top-k tie bug passes 3 trials and "
                "is caught by the high-trial replay",
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": {"gpu": gpu, "driver": driver},
        "command": "bench/gate/gate_evidence.sh OUT_DIR aa slow ties",
        "timing_method": "cupti span per call, 2xL2 flush before each, A/B pairs in random order, "
                         "workloads in a fresh random order each round (gate/paired_run.h)",
        "statistics": "per-workload speedup = geometric mean over rounds of the ratio of round "
                      "medians; 95% intervals from a two-stage (rounds, then pairs) bootstrap; "
                      "Holm over workloads and over regimes at alpha 0.05",
        "steps": steps,
        "noise_floor": None if not noise else {
            k: noise[k] for k in ("gpu", "timing_method", "minimum_effect", "distribution_spread",
                                  "median_workload_spread", "max_workload_spread")},
        "aa_noise_gate": None if not noise else gate_summary(noise["aa"], floors),
        "first_candidate": decision(promote_first),
        "aa_promotion": decision(promote_aa),
        "slow_promotion": decision(promote_slow),
        "slow_full_gate": None if not gate_slow else gate_summary(gate_slow, floors),
        "ties_three_trial_sweep": None if not ties_sweep else {
            k: ties_sweep[k] for k in ("items", "passed", "failed")},
        "ties_promotion": decision(promote_ties),
    }
    if gate_slow and floors:
        changes = [w["change_percent"]["estimate"] for w in doc["slow_full_gate"]["workloads"]]
        doc["slow_full_gate"]["median_change_percent"] = statistics.median(changes)
    result.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {result}")


if __name__ == "__main__":
    main()
