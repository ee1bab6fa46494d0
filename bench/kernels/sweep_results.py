#!/usr/bin/env python3
"""One sweep's store as a JSON object, for the bench scripts that summarize it later:
{hash[:12]: {"params": {...}, "results": [{"workload", "status", "latency_seconds"}...]}} from
`kh history` and `kh show` of every candidate in the store; prints a line per candidate
(hash, workloads passed, params).

Usage: bench/kernels/sweep_results.py KH STORE OUT.json
"""
import json
import subprocess
import sys


def kh_json(kh, *args):
    return json.loads(subprocess.run([kh, *args], capture_output=True, text=True).stdout or "[]")


def main():
    kh, store, out = sys.argv[1:4]
    res = {}
    for c in kh_json(kh, "history", "--store", store, "--json"):
        show = kh_json(kh, "show", c["hash"], "--store", store, "--json")
        res[c["hash"][:12]] = {
            "params": c.get("params", {}),
            "results": [{"workload": r["workload"], "status": r["status"],
                         "latency_seconds": r.get("latency_seconds")} for r in show["results"]]}
    with open(out, "w") as f:
        json.dump(res, f)
    for h, v in res.items():
        print(h, sum(r["status"] == "PASSED" for r in v["results"]), json.dumps(v["params"]))


if __name__ == "__main__":
    main()
