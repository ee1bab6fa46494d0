#!/usr/bin/env python3
"""Summarise a bench/baselines/run_baselines.sh output folder as one committed result JSON:
per definition and timer, every candidate's per-workload status, latency and roofline floor, its
summary, and the headline points the kernel issues quote (GDN decode at batch 64, GDN prefill at
8192 tokens in 57 cu_seqlens entries).

Usage: bench/baselines/summarize_baselines.py OUT_DIR RESULT.json COMMIT
"""
import datetime
import glob
import json
import os
import statistics
import sys

# Workloads the kernel issues quote, by definition: axis values that pick them.
HEADLINES = {
    "gdn_decode_qk4_v8_d128_k_last": {"batch_size": 64},
    "gdn_prefill_qk4_v8_d128_k_last": {"total_seq_len": 8192, "len_cu_seqlens": 57},
}


def load(path):
    with open(path) as f:
        return json.load(f)


def workload_axes(out, definition):
    axes = {}
    path = os.path.join(out, f"workloads_{definition}.jsonl")
    if os.path.exists(path):
        for line in open(path):
            w = json.loads(line)["workload"]
            axes[w["uuid"]] = w["axes"]
    return axes


def headline(definition, axes, rows):
    pick = HEADLINES.get(definition)
    if not pick:
        return None
    chosen = [r for r in rows
              if all(axes.get(r["workload"], {}).get(k) == v for k, v in pick.items())]
    timed = [r["latency_seconds"] for r in chosen if r["latency_seconds"] is not None]
    return {"axes": pick, "workloads": len(chosen), "timed": len(timed),
            "mean_latency_us": round(statistics.mean(timed) * 1e6, 3) if timed else None,
            "latencies_us": [round(t * 1e6, 3) for t in timed]}


def main():
    out, result, commit = sys.argv[1], sys.argv[2], sys.argv[3]
    machine = open(os.path.join(out, "gpu.txt")).read().strip().split(", ")
    gpu, driver = machine if len(machine) == 2 else ("none", "none")
    steps = {}
    for line in open(os.path.join(out, "steps.txt")):
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit():
            steps[parts[0]] = {"exit_status": int(parts[1]), "wall_seconds": float(parts[2])}
    definitions = {}
    for path in sorted(glob.glob(os.path.join(out, "sweep_*.json"))):
        name = os.path.basename(path)[len("sweep_"):-len(".json")]
        definition, timer = name.rsplit("_", 1)
        try:
            sweep = load(path)
        except ValueError:  # killed before it printed its outcome (see steps)
            definitions.setdefault(definition, {})[timer] = {
                **steps.get(name, {}), "unfinished": True}
            continue
        axes = workload_axes(out, definition)
        candidates = []
        for c in sweep["candidates"]:
            show_path = os.path.join(out, f"show_{name}_{c['hash'][:12]}.json")
            if not os.path.exists(show_path):
                continue
            show = load(show_path)
            rows = [{k: r[k] for k in ("workload", "index", "status", "latency_seconds",
                                        "floor_seconds", "fraction_of_floor")}
                    | ({"message": r["message"][:400]} if r["status"] != "PASSED" else {})
                    for r in show["results"]]
            candidates.append({"name": c["name"], "hash": c["hash"], "summary": show["summary"],
                               "headline": headline(definition, axes, rows), "workloads": rows})
        definitions.setdefault(definition, {})[timer] = {
            **steps.get(name, {}), "sweep": sweep["sweep"], "items": sweep["items"],
            "passed": sweep["passed"], "failed": sweep["failed"], "candidates": candidates}
    doc = {
        "what": "each definition's current candidate, its baselines (baselines/) and its "
                "official PyTorch reference, swept interleaved per workload under two timers",
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": {"gpu": gpu, "driver": driver},
        "command": "bench/baselines/run_baselines.sh OUT",
        "method": "kh sweep --backend cuda --trials 1 --timing cupti|graph: one strict "
                  "correctness trial (poisoned outputs, red zones, determinism and anti-caching "
                  "calls) judged by kh's GPU references, then the timer at the definition's "
                  "official warmup/iterations/trials with a cold L2 before each call; candidates "
                  "interleaved per workload, the first rotating. cupti: the span of the call's "
                  "kernels (FlashInfer-Bench's method); graph: CUDA-graph replay of one call. "
                  "Python baselines run in kh's Python worker on kh's stream. Floors: the "
                  "roofline minimum of each call from the machine ceilings, where stored",
        "definitions": definitions,
    }
    with open(result, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
