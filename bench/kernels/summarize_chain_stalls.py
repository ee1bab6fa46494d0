#!/usr/bin/env python3
"""Groups an Nsight Compute SASS source page (ncu --page source --csv --print-source=sass) of a
GDN prefill small-chunk kernel by role and stall reason. A warp role's loop body is a run of
consecutive instructions with the same executed count (CTAs x warps of the role x chunks); the
chain is the longest such run holding at least 40 HMMA. Prints, per run of at least 20 samples,
its count, length and samples, and for the chain the share of its samples per stall reason and
in mbarrier waits (a branch after a try-wait whose samples are mostly long scoreboard) as JSON.

Usage: summarize_chain_stalls.py SASS_CSV
"""
import collections
import json
import sys

from ncu_sass import load


def runs(instructions):
    out = []
    for ins in instructions:
        if out and out[-1][0]["executed"] == ins["executed"]:
            out[-1].append(ins)
        else:
            out.append([ins])
    return out


def is_barrier_wait(ins):
    return ("BRA" in ins["source"] and ins["samples"] > 0 and
            ins["stalls"].get("long_sb", 0) > 0.8 * ins["samples"])


def main():
    instructions = load(sys.argv[1])
    total = sum(i["samples"] for i in instructions) or 1.0
    all_runs = runs(instructions)
    for run in all_runs:
        samples = sum(i["samples"] for i in run)
        if samples >= 20:
            print(f"executed {run[0]['executed']:7d}  instructions {len(run):4d}  "
                  f"samples {int(samples):6d} ({100 * samples / total:.1f} %)")
    chain = max(all_runs, key=lambda r: len(r) if sum("HMMA" in i["source"] for i in r) >= 40 else 0)
    samples = sum(i["samples"] for i in chain) or 1.0
    by_reason = collections.Counter()
    for ins in chain:
        by_reason.update(ins["stalls"])
    waits = sorted((i["samples"] / samples for i in chain if is_barrier_wait(i)), reverse=True)
    print(json.dumps({
        "chain_executions_per_instruction": chain[0]["executed"],
        "chain_instructions_per_chunk": len(chain),
        "chain_hmma_per_chunk": sum("HMMA" in i["source"] for i in chain),
        "chain_share_of_all_samples": round(samples / total, 3),
        "samples_total": int(total),
        "chain_samples_by_reason": {k: round(v / samples, 3) for k, v in by_reason.most_common(8)},
        "chain_mbarrier_wait_share": round(sum(waits), 3),
        "largest_waits_share": [round(w, 3) for w in waits[:3]],
    }, indent=1))


if __name__ == "__main__":
    main()
