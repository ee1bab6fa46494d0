#!/usr/bin/env python3
"""Summarise a bench/engine/sweep_wall_time.sh output folder as one committed result JSON.

Usage: bench/engine/summarize.py OUT_DIR RESULT.json COMMIT
"""
import datetime
import glob
import json
import os
import statistics
import sys


def main():
    out, result, commit = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.path.join(out, "ceilings_report.json")) as f:
        ceilings = json.load(f)
    walls = {}
    with open(os.path.join(out, "wall_seconds.txt")) as f:
        for line in f:
            name, status, seconds = line.split()
            walls[name] = {"exit_status": int(status), "wall_seconds": float(seconds)}
    sweeps = {}
    for path in sorted(glob.glob(os.path.join(out, "timed_*.json"))):
        name = os.path.basename(path)[len("timed_"):-len(".json")]
        with open(path) as f:
            report = json.load(f)
        rows = []
        for r in report["results"]:
            t = r.get("timing") or {}
            rows.append({"workload": r["workload"], "axes": r["axes"], "status": r["status"],
                         "latency_seconds": t.get("latency_seconds"),
                         "trial_medians_seconds": t.get("trial_medians_seconds"),
                         "floor_seconds": t.get("floor_seconds"),
                         "fraction_of_floor": t.get("fraction_of_floor"),
                         "throttled_samples": t.get("throttled_samples"),
                         "cost": t.get("cost")})
        fractions = [r["fraction_of_floor"] for r in rows if r["fraction_of_floor"] is not None]
        sweeps[name] = {**walls.get(name, {}), "workloads": len(rows),
                        "passed": report["passed"], "timing_config": (rows and next(
                            (r2["timing"]["config"] for r2 in report["results"] if r2.get("timing")),
                            None)),
                        "median_fraction_of_floor": statistics.median(fractions) if fractions else None,
                        "per_workload": rows}
    environment = ceilings["details"].get("environment", {})
    summary = {
        "what": "engine benchmark (bench/engine/sweep_wall_time.sh): machine ceilings, and the wall "
                "time of kh eval over each definition's full official workload set at official "
                "counts with GPU references, for the example candidates",
        "date": datetime.date.today().isoformat(), "commit": commit,
        "machine": environment,
        "method": "kh eval --backend cuda --trials 3 (strict checks, GPU references, inputs drawn "
                  "on the device) --timing cupti (official span rule, cold L2, official "
                  "warmup/iterations/trials) --ceilings; wall seconds from the shell around each "
                  "kh eval (build cached); ceilings by kh ceilings (CUPTI span medians)",
        "ceilings": ceilings["ceilings"], "ceilings_details": ceilings["details"],
        "sweeps": sweeps,
    }
    with open(result, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
