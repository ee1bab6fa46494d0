#!/usr/bin/env python3
"""Summarise a bench/baselines/run_baselines.sh output folder as one committed result JSON:
per definition and timer, every candidate's per-workload status, latency and roofline floor, its
summary, and the headline points the kernel issues quote (GDN decode at batch 64, GDN prefill at
8192 tokens in 57 cu_seqlens entries).

Usage: bench/baselines/summarize_baselines.py [--floors DIR] RESULT.json COMMIT OUT_DIR...
Several output folders (runs with other timers, definitions or strides) merge into one result; a
later folder's (definition, timer) replaces an earlier one's unless it did not finish. A run swept
without ceilings gets its floors from DIR/roofline_<definition>.json (`kh roofline D --ceilings
FILE --json`: the same cost model on the same trial-0 inputs).
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
            axes[w["uuid"].replace("-", "")] = w["axes"]
    return axes


def headline(definition, axes, rows):
    pick = HEADLINES.get(definition)
    if not pick:
        return None
    chosen = [r for r in rows
              if all(axes.get(r["workload"].replace("-", ""), {}).get(k) == v
                     for k, v in pick.items())]
    timed = [r["latency_seconds"] for r in chosen if r["latency_seconds"] is not None]
    return {"axes": pick, "workloads": len(chosen), "timed": len(timed),
            "mean_latency_us": round(statistics.mean(timed) * 1e6, 3) if timed else None,
            "latencies_us": [round(t * 1e6, 3) for t in timed]}


def load_floors(folder):
    floors = {}
    for path in glob.glob(os.path.join(folder, "roofline_*.json")):
        for w in load(path)["workloads"]:
            floors[w["workload"].replace("-", "")] = w["floor_seconds"]
    return floors


def with_floor(row, floors):
    if row["floor_seconds"] is None:
        row["floor_seconds"] = floors.get(row["workload"].replace("-", ""))
        if row["floor_seconds"] is not None and row["latency_seconds"]:
            row["fraction_of_floor"] = row["floor_seconds"] / row["latency_seconds"]
    return row


CAPTURE_FAILURES = ("during graph capture", "cannot be captured in a CUDA graph")


def label_capture_failure(row):
    """A graph timing that failed because the call cannot be captured is kh's RUNTIME_ERROR (the
    official rule for a timer failure), but the candidate passed its correctness trial: say so."""
    if row["status"] == "RUNTIME_ERROR" and any(m in row.get("message", "")
                                                for m in CAPTURE_FAILURES):
        row["timing_error"] = "not capturable in a CUDA graph (correctness passed)"
    return row


def official_count(definition):
    """How many workloads the definition's official set has (the shipped dataset)."""
    paths = glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "workloads", "*",
                                   definition + ".jsonl"))
    return sum(1 for _ in open(paths[0])) if paths else None


def summarize(out, definitions, floors):
    machine = open(os.path.join(out, "gpu.txt")).read().strip().split(", ")
    gpu, driver = machine if len(machine) == 2 else ("none", "none")
    steps = {}
    for line in open(os.path.join(out, "steps.txt")):
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit():
            steps[parts[0]] = {"exit_status": int(parts[1]), "wall_seconds": float(parts[2])}
    for path in sorted(glob.glob(os.path.join(out, "sweep_*.json"))):
        name = os.path.basename(path)[len("sweep_"):-len(".json")]
        definition, timer = name.rsplit("_", 1)
        try:
            sweep = load(path)
        except ValueError:  # killed before it printed its outcome (see steps)
            definitions.setdefault(definition, {}).setdefault(timer, {
                **steps.get(name, {}), "unfinished": True, "run": os.path.basename(out)})
            continue
        axes = workload_axes(out, definition)
        candidates = []
        for c in sweep["candidates"]:
            show_path = os.path.join(out, f"show_{name}_{c['hash'][:12]}.json")
            if not os.path.exists(show_path):
                continue
            show = load(show_path)
            rows = [label_capture_failure(with_floor({k: r[k] for k in ("workload", "index", "status", "latency_seconds",
                                        "floor_seconds", "fraction_of_floor")}
                    | ({"message": r["message"][:400]} if r["status"] != "PASSED" else {}),
                               floors))
                    for r in show["results"]]
            summary = dict(show["summary"])
            summary["not_capturable"] = sum(1 for r in rows if "timing_error" in r)
            candidates.append({"name": c["name"], "hash": c["hash"], "summary": summary,
                               "headline": headline(definition, axes, rows), "workloads": rows})
        definitions.setdefault(definition, {})[timer] = {
            **steps.get(name, {}), "run": os.path.basename(out), "workloads": len(axes),
            "official_workloads": official_count(definition),
            "sweep": sweep["sweep"], "items": sweep["items"], "passed": sweep["passed"],
            "failed": sweep["failed"], "candidates": candidates}
    return gpu, driver


def main():
    args = sys.argv[1:]
    floors = {}
    if args[:1] == ["--floors"]:
        floors, args = load_floors(args[1]), args[2:]
    result, commit, outs = args[0], args[1], args[2:]
    definitions = {}
    machines = {summarize(out, definitions, floors) for out in outs}
    if len(machines) != 1:
        sys.exit("the runs come from different machines: %s" % sorted(machines))
    gpu, driver = machines.pop()
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
                  "roofline minimum of each call (kh's cost model on the trial-0 inputs) on the "
                  "machine's measured ceilings; fraction_of_floor = floor / latency",
        "definitions": definitions,
    }
    with open(result, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
