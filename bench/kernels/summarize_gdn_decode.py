#!/usr/bin/env python3
"""The GDN decode evidence of one bench/kernels/run_kernel_bench.sh run as a committed result:
every candidate's per-workload numbers (bench/baselines/summarize_baselines.py's format) plus the
issue-8 criteria, each next to what a plain copy of the same bytes achieved in the same run.

Usage: bench/kernels/summarize_gdn_decode.py OUT_DIR RESULT.json COMMIT

Criteria (cupti timer, official counts; `khk` is kernels/gdn_decode, `fla` the fla baseline):
  mix_mean          mean over the official workloads, khk / fla (target <= 0.85)
  small_batches     per batch size <= 8, khk / fla (target <= 0.7)
  large_batches     per batch size >= 32, the state traffic's rate as a fraction of the peak copy
                    bandwidth (kh ceilings) and of a copy of the same bytes (target >= 0.9)
  batch_1           the span above the empty-kernel span (target <= 1.0 us)
A copy of the same bytes is kh ceilings' copy kernel on a buffer of B x 512 KiB (B x 1 MiB read
plus written), interpolated linearly in time between the measured buffer sizes.
"""
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "baselines"))
import summarize_baselines  # noqa: E402

DEFINITION = "gdn_decode_qk4_v8_d128_k_last"
STATE_BYTES_PER_BATCH = 8 * 128 * 128 * 4  # fp32 state of one batch row, read and written once
TARGETS = {"mix_mean": 0.85, "small_batches": 0.7, "large_batches": 0.9, "batch_1_us": 1.0}


def copy_seconds(copies, buffer_bytes):
    """The copy kernel's span for a buffer of `buffer_bytes`, interpolated between measurements."""
    points = sorted((c["bytes"], c["kernel_seconds"]) for c in copies)
    for (b0, t0), (b1, t1) in zip(points, points[1:]):
        if b0 <= buffer_bytes <= b1:
            return t0 + (t1 - t0) * (buffer_bytes - b0) / (b1 - b0)
    return None


def by_batch(candidate, axes):
    out = {}
    for row in candidate["workloads"]:
        latency = row["latency_seconds"]
        if latency is not None:
            batch = axes[row["workload"].replace("-", "")]["batch_size"]
            out.setdefault(batch, []).append(latency)
    return out


def criteria(timer_result, axes, ceilings_report):
    ceilings = ceilings_report["ceilings"]
    details = ceilings_report["details"]
    empty = details["harness_floor_seconds"].get("cupti", ceilings["empty_kernel_seconds"])
    peak = ceilings["copy_bytes_per_second"]
    cands = {c["name"]: c for c in timer_result["candidates"]}
    khk = next(c for name, c in cands.items() if name.startswith("khk_"))
    fla = cands.get("fla_gdn_decode")
    ours, theirs = by_batch(khk, axes), by_batch(fla, axes) if fla else {}
    all_ours = [t for ts in ours.values() for t in ts]
    all_theirs = [t for ts in theirs.values() for t in ts]
    copy_mix = [copy_seconds(details["copies"], b * STATE_BYTES_PER_BATCH)
                for b, ts in ours.items() for _ in ts]
    rows = {}
    for batch in sorted(ours):
        mean = statistics.mean(ours[batch])
        fla_mean = statistics.mean(theirs[batch]) if batch in theirs else None
        copy = copy_seconds(details["copies"], batch * STATE_BYTES_PER_BATCH)
        moved = 2 * batch * STATE_BYTES_PER_BATCH
        rows[batch] = {
            "workloads": len(ours[batch]),
            "khk_us": round(mean * 1e6, 3),
            "fla_us": round(fla_mean * 1e6, 3) if fla_mean else None,
            "khk_over_fla": round(mean / fla_mean, 3) if fla_mean else None,
            "same_size_copy_us": round(copy * 1e6, 3) if copy else None,
            "khk_over_same_size_copy": round(mean / copy, 3) if copy else None,
            "state_bytes_per_second": moved / mean,
            "fraction_of_peak_copy": round(moved / mean / peak, 3),
            "fraction_of_same_size_copy": round(copy / mean, 3) if copy else None,
        }
    small = {b: r["khk_over_fla"] for b, r in rows.items() if b <= 8}
    large = {b: {"of_peak_copy": r["fraction_of_peak_copy"],
                 "of_same_size_copy": r["fraction_of_same_size_copy"]}
             for b, r in rows.items() if b >= 32}
    ours_mix = statistics.mean(all_ours)
    fla_mix = statistics.mean(all_theirs) if all_theirs else None
    copy_mean = statistics.mean(copy_mix) if None not in copy_mix else None
    mix = ours_mix / fla_mix if fla_mix else None
    result = {
        "empty_kernel_us": round(empty * 1e6, 3),
        "peak_copy_bytes_per_second": peak,
        "per_batch": rows,
        "mix_mean": {"khk_us": round(ours_mix * 1e6, 3),
                     "fla_us": round(fla_mix * 1e6, 3) if fla_mix else None,
                     "same_size_copy_us": round(copy_mean * 1e6, 3) if copy_mean else None,
                     "khk_over_fla": round(mix, 3) if mix else None,
                     "same_size_copy_over_fla": round(copy_mean / fla_mix, 3)
                     if fla_mix and copy_mean else None,
                     "target": TARGETS["mix_mean"], "met": mix is not None and
                     mix <= TARGETS["mix_mean"]},
        "small_batches": {"khk_over_fla": small, "target": TARGETS["small_batches"],
                          "met": all(v is not None and v <= TARGETS["small_batches"]
                                     for v in small.values())},
        "large_batches": {"fractions": large, "target": TARGETS["large_batches"],
                          "met_against_peak_copy": all(v["of_peak_copy"] >= 0.9
                                                       for v in large.values()),
                          "met_against_same_size_copy": all(
                              (v["of_same_size_copy"] or 0) >= 0.9 for v in large.values())},
    }
    if 1 in rows:
        above = rows[1]["khk_us"] - empty * 1e6
        copy_above = (rows[1]["same_size_copy_us"] or 0) - empty * 1e6
        result["batch_1"] = {"span_above_empty_us": round(above, 3),
                             "same_size_copy_above_empty_us": round(copy_above, 3),
                             "target_us": TARGETS["batch_1_us"],
                             "met": above <= TARGETS["batch_1_us"]}
    return result


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out, result_path, commit = sys.argv[1:]
    definitions = {}
    gpu, driver = summarize_baselines.summarize(out, definitions, {})
    with open(os.path.join(out, "ceilings_report.json")) as f:
        ceilings_report = json.load(f)
    axes = summarize_baselines.workload_axes(out, DEFINITION)
    timers = definitions[DEFINITION]
    doc = {
        "what": "kernels/gdn_decode (libkhk's GDN decode) against fla and the definition's "
                "reference, interleaved per workload, with the same run's ceilings",
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": {"gpu": gpu, "driver": driver},
        "command": f"bench/kernels/run_kernel_bench.sh OUT {DEFINITION}; "
                   "bench/kernels/summarize_gdn_decode.py OUT RESULT COMMIT",
        "method": "kh sweep --backend cuda --trials 1 --timing cupti|graph at the official "
                  "counts, cold L2 (2x L2 memset) before every call; cupti is the span of the "
                  "call's kernels (FlashInfer-Bench's method), graph a CUDA-graph replay. "
                  "Ceilings and same-size copies: kh ceilings in the same run, same timer",
        "ceilings": ceilings_report,
        "criteria": {timer: criteria(result, axes, ceilings_report)
                     for timer, result in timers.items()
                     if timer == "cupti" and "candidates" in result},
        "definitions": definitions,
    }
    with open(result_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(json.dumps(doc["criteria"], indent=1))


if __name__ == "__main__":
    main()
