#!/usr/bin/env python3
"""Per-workload mean latencies of A and B in the stored paired gates of one promotion (the full
and re-measured stages of `kh promote`), with the workloads' axes: what the gates' per-regime
percentages rest on, as microseconds. Reads the store's SQLite file directly (kh compare reads
sweeps, and a promotion stores gates).

Usage: bench/kernels/gate_workload_means.py STORE_DIR A_HASH_PREFIX B_HASH_PREFIX
  (a store with the promotion's bundle imported: kh store import BUNDLE --store STORE_DIR)
Prints one JSON object: per stage, per workload uuid {axes, a_us, b_us, pairs}.
"""
import json
import os
import sqlite3
import statistics
import sys


def main():
    store, a, b = sys.argv[1:4]
    db = sqlite3.connect(os.path.join(store, "store.db"))
    axes = {uuid: json.loads(j)["axes"] for uuid, j in db.execute("select uuid, json from workloads")}
    out = {}
    rows = db.execute(
        "select stage, samples from gates where candidate_a like ? and candidate_b like ? and "
        "stage in ('full', 'remeasured') order by created_at", (a + "%", b + "%"))
    for stage, samples in rows:
        per = {}
        for w in json.loads(samples):
            av = [x for r in w["rounds"] for x in r["a"]]
            bv = [x for r in w["rounds"] for x in r["b"]]
            per[w["workload"]] = {"axes": axes.get(w["workload"]), "a_us": 1e6 * statistics.fmean(av),
                                  "b_us": 1e6 * statistics.fmean(bv), "pairs": len(av)}
        out[stage] = per
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
