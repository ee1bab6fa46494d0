#!/usr/bin/env python3
"""A kh promote run (bench/kernels/run_promote.sh OUT ...) as a committed bench/results file: the
decision JSON as kh printed it, with the machine, commit, date, command and timing method.

Usage: bench/kernels/summarize_promotion.py OUT RESULT.json --what TEXT --commit TEXT --command TEXT
"""
import argparse
import datetime
import json
import os

TIMING = ("cupti span, L2 flushed before every call; paired and interleaved per workload (rounds x "
          "pairs, randomised order), bootstrap intervals, Holm across workloads; the objective, the "
          "minimum effect and its source are in each decision")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", help="the OUT folder of run_promote.sh")
    ap.add_argument("result")
    ap.add_argument("--what", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--timing", default=TIMING)
    a = ap.parse_args()
    with open(os.path.join(a.out, "promote.json")) as f:
        decisions = json.load(f)
    with open(os.path.join(a.out, "gpu.txt")) as f:
        machine = f.read().strip() + " (nvidia-smi: name, driver, max SM clock)"
    result = {
        "what": a.what,
        "date": datetime.date.today().isoformat(),
        "machine": machine,
        "commit": a.commit,
        "command": a.command,
        "timing": a.timing,
        "promote": decisions,
    }
    with open(a.result, "w") as f:
        json.dump(result, f, indent=1)
    for d in decisions:
        print(d.get("decision"), "-", d.get("reason"))


if __name__ == "__main__":
    main()
