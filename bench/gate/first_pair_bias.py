#!/usr/bin/env python3
"""How often a gate's timed samples fall in a fast mode, by side (A, B) and by pair index within a
round: the evidence for kh's warmup_order (src/kh/gpu/interleaved_timer.h). A sample is fast when
it is below FAST x its side's round median. Before warmup_order, every call was warmed in index
order (A, then B), so the first timed call followed B's own warmup whenever B went first.

Usage: bench/gate/first_pair_bias.py STORE.db...   (a store: kh store import BUNDLE --store DIR)
Prints one JSON object per gate.
"""
import json
import sqlite3
import statistics
import sys

FAST = 0.75


def gate_bias(samples):
    fast = {"a": [0] * 64, "b": [0] * 64}
    count = {"a": [0] * 64, "b": [0] * 64}
    for workload in samples:
        for rnd in workload["rounds"]:
            for side in ("a", "b"):
                values = rnd[side]
                if not values:
                    continue
                median = statistics.median(values)
                for i, x in enumerate(values[:64]):
                    count[side][i] += 1
                    fast[side][i] += x < FAST * median
    out = {}
    for side in ("a", "b"):
        n0, f0 = count[side][0], fast[side][0]
        n_rest, f_rest = sum(count[side][1:]), sum(fast[side][1:])
        out[side] = {"first_pair_fast": f0, "first_pair_samples": n0,
                     "other_pairs_fast_fraction": round(f_rest / n_rest, 4) if n_rest else None}
    return out


def main(paths):
    for path in paths:
        db = sqlite3.connect(path)
        for gid, definition, a, b, samples in db.execute(
                "select id, definition, candidate_a, candidate_b, samples from gates"):
            if not samples:
                continue
            print(json.dumps({"store": path, "gate": gid[:12], "definition": definition,
                              "a": a[:12], "b": b[:12], **gate_bias(json.loads(samples))}))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
