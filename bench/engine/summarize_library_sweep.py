#!/usr/bin/env python3
"""Summarise a bench/engine/library_sweep.sh output folder as one committed result JSON.

Usage: bench/engine/summarize_library_sweep.py OUT_DIR RESULT.json COMMIT
"""
import datetime
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    out, result, commit = sys.argv[1], sys.argv[2], sys.argv[3]
    gpu, driver = open(os.path.join(out, "gpu.txt")).read().strip().split(", ")
    walls = {}
    for line in open(os.path.join(out, "wall_seconds.txt")):
        name, status, seconds = line.split()
        walls[name] = {"exit_status": int(status), "wall_seconds": float(seconds)}
    sweeps = {}
    for path in sorted(glob.glob(os.path.join(out, "sweep_*.json"))):
        name = os.path.basename(path)[len("sweep_"):-len(".json")]
        sweep = load(path)
        show = load(os.path.join(out, f"show_{name}.json"))
        sweeps[name] = {
            **walls.get(name, {}),
            "sweep": sweep["sweep"],
            "candidate": sweep["candidates"][0],
            "items": sweep["items"], "passed": sweep["passed"], "failed": sweep["failed"],
            "flaky": sweep["flaky"],
            "summary": show["summary"],
            "regimes": show["regimes"],
            "workloads": [{k: r[k] for k in ("workload", "index", "status", "latency_seconds",
                                              "floor_seconds", "fraction_of_floor")}
                          for r in show["results"]],
        }
    pair = load(os.path.join(out, "pair_sweep.json"))
    compare = load(os.path.join(out, "pair_compare.json"))
    total = sum(s["wall_seconds"] for s in sweeps.values())
    doc = {
        "what": "kh sweep of each definition's example candidate over its full official set "
                "(the main job), and a two-candidate interleaved sweep over the GDN decode set",
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": {"gpu": gpu, "driver": driver},
        "command": "bench/engine/library_sweep.sh OUT",
        "method": "kh sweep --backend cuda --timing cupti --trials 3: 3 strict correctness trials "
                  "judged by the GPU references, then the official cupti span timing (cold L2, "
                  "official warmup/iterations/trials per definition) of every passing workload; "
                  "wall seconds from the shell around each kh sweep (builds cached); floors from "
                  "the ceilings kh ceilings stored on the machine, if any",
        "total_wall_seconds_five_definitions": round(total, 2),
        "sweeps": sweeps,
        "pair": {**walls.get("pair", {}), "sweep": pair["sweep"], "candidates": pair["candidates"],
                 "items": pair["items"], "passed": pair["passed"], "compare": compare},
        "bundle_bytes": os.path.getsize(os.path.join(out, "sweeps.khb")),
    }
    with open(result, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
