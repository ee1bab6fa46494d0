#!/usr/bin/env python3
"""Splits an Nsight Compute SASS source page (ncu --page source --csv --print-source=sass) of the
DSA split kernel into its phases by marker instructions, and prints each phase's share of the warp
samples and its leading stall reasons as JSON. The phases, in code order:
  indices   up to the first row gather (Q's and the indices' loads, the compaction),
  issue     from the first row gather (UBLKCP: bulk copy; else LDGSTS, cp.async) to the first
            wait after it (a transaction barrier's, or cp.async's DEPBAR: the copies' issue, held
            when the copy queue is full),
  wait      from there to the first HMMA (waiting for the first block to land),
  mma       from the first HMMA to the last (logits, softmax, PV, later blocks' waits),
  results   the rest (the results' stores, the in-grid merge, out-of-line code).
Each warp lives through every phase, so a phase's share of the samples is about its share of the
kernel's time.

Usage: summarize_dsa_stalls.py SASS_CSV
"""
import collections
import json
import sys

from ncu_sass import load


def opcode(instruction):
    """The SASS opcode with its modifiers, without a predicate (`@P0 LDG.E.64 ...` -> LDG.E.64)."""
    words = instruction["source"].split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def first(instructions, opcodes, begin=0):
    """The first instruction from `begin` whose opcode is one of `opcodes` or starts with one
    followed by a modifier (LDG matches LDG.E.64, not LDGSTS)."""
    for i in range(begin, len(instructions)):
        op = opcode(instructions[i])
        if any(op == o or op.startswith(o + ".") for o in opcodes):
            return i
    return None


def main():
    ins = load(sys.argv[1])
    total = sum(i["samples"] for i in ins) or 1.0
    # Q's cp.async (LDGSTS) come before the indices' loads (LDG); the rows' gathers after them.
    gather = first(ins, ("UBLKCP",))
    if gather is None:
        gather = first(ins, ("LDGSTS",), first(ins, ("LDG",)) or 0)
    hmma = [i for i, x in enumerate(ins) if "HMMA" in x["source"]]
    if gather is None or not hmma:
        sys.exit(f"{sys.argv[1]}: no gather or no HMMA instruction: not the split kernel")
    # The bulk form waits on a transaction barrier, the cp.async form on its groups (DEPBAR).
    wait = first(ins, ("SYNCS.PHASECHK", "DEPBAR"), gather)
    wait = wait if wait is not None and wait < hmma[0] else hmma[0]
    bounds = {"indices": (0, gather), "issue": (gather, wait), "wait": (wait, hmma[0]),
              "mma": (hmma[0], hmma[-1] + 1), "results": (hmma[-1] + 1, len(ins))}
    phases = {}
    for name, (a, b) in bounds.items():
        part = ins[a:b]
        samples = sum(i["samples"] for i in part)
        reasons = collections.Counter()
        for i in part:
            reasons.update(i["stalls"])
        phases[name] = {"instructions": [a, b], "share": round(samples / total, 3),
                        "by_reason": {k: round(v / (samples or 1.0), 2)
                                      for k, v in reasons.most_common(4)}}
    print(json.dumps({"samples": int(total), "hmma": len(hmma), "phases": phases}, indent=1))


if __name__ == "__main__":
    main()
