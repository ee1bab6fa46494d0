#!/usr/bin/env python3
"""GDN prefill sweep results as a committed result: per-workload latencies of every candidate of
one device run and their mean per regime of issues 10 and 11, with the ratio of each candidate to
a reference column (fla's CUDA-graph time, or the previous kernel).

Input: a JSON object {label: [{"workload", "status", "latency_seconds"}...]} as written by
bench/kernels/run_fla_graph_comparison.sh (fla_graph_results.json), or
{hash: {"params": {...}, "results": [...]}} as written by bench/kernels/run_gdn_prefill_split.sh
(sweep_results.json). Regimes: <= 256 tokens; exactly 8192; <= 2 sequences with >= 1024 tokens;
257-8191 tokens other than those; and 257-8191 all (issue 11's second regime).

Usage: bench/kernels/summarize_gdn_prefill_regimes.py RESULTS.json OUT.json REFERENCE_LABEL
         --what TEXT --commit TEXT --command TEXT --timing TEXT [--note KEY=TEXT ...]
"""
import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import summarize_gdn_prefill  # noqa: E402  (the issues' regimes: one definition)

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
WORKLOADS = os.path.join(ROOT, "workloads/gdn/gdn_prefill_qk4_v8_d128_k_last.jsonl")


def regimes_of(axes):
    """summarize_gdn_prefill's regimes, with 257-8191 also split into the few long sequences and
    the others (so that the two add up)."""
    small, mid, few_long, large = summarize_gdn_prefill.REGIMES
    issue = summarize_gdn_prefill.regimes_of(axes)
    if small in issue:
        return ["<=256 tokens"]
    if large in issue:
        return ["8192 tokens"]
    first = "<=2 sequences, >=1024 tokens" if few_long in issue else "257-8191 tokens, other"
    return [first, "257-8191 tokens, all (issue 11)"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("reference")
    ap.add_argument("--what", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--timing", required=True)
    ap.add_argument("--machine", default="NVIDIA H200, driver 580.159.04, 1980 MHz max SM clock")
    ap.add_argument("--note", action="append", default=[])
    a = ap.parse_args()

    axes = {}
    for line in open(WORKLOADS):
        w = json.loads(line)["workload"]
        axes[w["uuid"]] = w["axes"]
    raw = json.load(open(a.results))
    runs, params = {}, {}
    for label, v in raw.items():
        if isinstance(v, dict):
            params[label] = v.get("params", {})
            v = v["results"]
        runs[label] = {r["workload"]: r for r in v}
    if a.reference not in runs:
        raise SystemExit(f"{a.results}: no candidate labelled {a.reference!r}; have {sorted(runs)}")

    workloads, sums = {}, {}
    for label, rs in runs.items():
        for uuid, r in rs.items():
            w = workloads.setdefault(uuid, {"axes": axes[uuid], "regimes": regimes_of(axes[uuid])})
            us = r["latency_seconds"] * 1e6 if r.get("latency_seconds") else None
            w[label] = {"status": r["status"], "us": round(us, 2) if us else None}
            if r["status"] != "PASSED" or us is None:
                continue
            for g in w["regimes"] + ["all"]:
                sums.setdefault(g, {}).setdefault(label, []).append(us)
    regimes = {}
    for g, by in sums.items():
        ref = by.get(a.reference)
        regimes[g] = {"workloads": max(len(x) for x in by.values())}
        for label, xs in by.items():
            m = sum(xs) / len(xs)
            regimes[g][f"{label}_us"] = round(m, 2)
            if ref and label != a.reference:
                regimes[g][f"{label}_over_reference"] = round(m / (sum(ref) / len(ref)), 3)
    doc = {
        "what": a.what,
        "date": datetime.date.today().isoformat(),
        "machine": a.machine,
        "commit": a.commit,
        "command": a.command,
        "timing": a.timing,
        "reference": a.reference,
        "params": params or None,
        "notes": dict(n.split("=", 1) for n in a.note),
        "regimes": regimes,
        "workloads": workloads,
    }
    json.dump(doc, open(a.out, "w"), indent=1)
    for g in ["<=256 tokens", "257-8191 tokens, other", "<=2 sequences, >=1024 tokens",
              "257-8191 tokens, all (issue 11)", "8192 tokens", "all"]:
        if g in regimes:
            print(g, json.dumps(regimes[g]))


if __name__ == "__main__":
    main()
