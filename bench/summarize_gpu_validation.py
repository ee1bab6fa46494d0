#!/usr/bin/env python3
"""Summarise a bench/gpu_validation.sh output folder as one committed result JSON.

Usage: bench/summarize_gpu_validation.py OUT_DIR RESULT.json [COMMIT]
(COMMIT overrides OUT_DIR/commit.txt, for runs on a copy of the tree without its git history)
"""
import datetime
import glob
import json
import os
import sys


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def gtest_results(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, json.JSONDecodeError):
        return {"error": f"no gtest JSON at {os.path.basename(path)}"}
    tests = []
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            failed = bool(t.get("failures"))
            skipped = t.get("result") == "SKIPPED"
            tests.append({"test": f"{suite['name']}.{t['name']}",
                          "result": "FAILED" if failed else "SKIPPED" if skipped else "PASSED",
                          "time": t.get("time")})
    return {"passed": sum(t["result"] == "PASSED" for t in tests), "total": len(tests),
            "tests": tests}


def eval_summary(path):
    with open(path) as f:
        report = json.load(f)
    results = report["results"]
    return {"candidate": report["candidate"], "reference": report.get("reference"),
            "trials": report["trials"], "workloads": len(results), "passed": report["passed"],
            "seconds_total": round(sum(r["seconds"] for r in results), 3),
            "per_workload": [{"workload": r["workload"], "axes": r["axes"], "status": r["status"],
                              "seconds": round(r["seconds"], 4),
                              "nondeterministic": r["nondeterministic"],
                              **({"message": r["message"]} if r["status"] != "PASSED" else {})}
                             for r in results]}


def main():
    out, result = sys.argv[1], sys.argv[2]
    gpu = read(os.path.join(out, "gpu.txt")).split(", ")
    summary = {
        "what": "GPU validation of the evaluation engine (bench/gpu_validation.sh)",
        "date": datetime.date.today().isoformat(),
        "commit": sys.argv[3] if len(sys.argv) > 3 else read(os.path.join(out, "commit.txt")),
        "machine": {"gpu": gpu[0] if gpu else "", "driver": gpu[1] if len(gpu) > 1 else "",
                    "nvcc": read(os.path.join(out, "nvcc.txt")).splitlines()[-1:]},
        "method": ("kh eval --backend cuda --json with kh's strict checks (poisoned outputs, red "
                   "zones, input checks, determinism and anti-caching calls); inputs drawn on the "
                   "device, judged by the GPU references unless --cpu-reference; seconds are the "
                   "coordinator's wall time per workload (build cached, worker start included)"),
        "gtest": {name: gtest_results(os.path.join(out, f"{name}.json"))
                  for name in ("gpu_generator_test", "gpu_reference_test", "gpu_eval_test")},
        "examples": {},
    }
    for path in sorted(glob.glob(os.path.join(out, "eval_*.json"))):
        definition = os.path.basename(path)[len("eval_"):-len(".json")]
        try:
            summary["examples"][definition] = eval_summary(path)
        except (OSError, json.JSONDecodeError, KeyError) as e:
            summary["examples"][definition] = {"error": str(e)}
    comparison = {}
    for ref in ("gpu", "cpu"):
        path = os.path.join(out, f"moe_reference_{ref}.json")
        try:
            comparison[ref] = eval_summary(path)
        except (OSError, json.JSONDecodeError, KeyError) as e:
            comparison[ref] = {"error": str(e)}
    summary["moe_reference_time"] = comparison
    with open(result, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
