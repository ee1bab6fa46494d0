#!/usr/bin/env python3
"""Cross-checks kh's native CPU references against a definition's own PyTorch reference.

Each FILE is a safetensors file written by `kh gen --reference`: tensors "input.<name>" (the
inputs kh generated) and "ref.<name>" (kh's CPU reference outputs), metadata naming the
definition, workload and trial. This script runs the definition's `reference` source on those
inputs with torch and compares its outputs with kh's, by the official element rule (an element
fails iff |x-y| > atol and |x-y|/(|y|+1e-8) > rtol; a tensor fails if the matched fraction is
below the required ratio) with the official tolerances; top-k index outputs are compared as sets
of scores. Needs torch (and a GPU for speed): run it on the GPU machine.

Usage: tools/xcheck_reference.py --definitions DIR [--device cuda] [--json OUT] FILE...
Exit status: 0 if every file agrees, 1 otherwise.
"""
import argparse
import json
import math
import pathlib
import struct
import sys
import time

import torch

# Official tolerances (fib_eval_spec §0/§3): (atol, rtol, required matched ratio).
DEFAULT_TOLERANCE = (1e-2, 1e-2, 1.0)
TOLERANCES = {"moe_fp8_block_scale": (1.0, 0.3, 0.9)}

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2, "I64": torch.int64,
    "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}


def read_safetensors(path):
    data = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        buf = bytearray(data[base + begin:base + end])
        t = torch.frombuffer(buf, dtype=DTYPES[info["dtype"]]) if buf else torch.empty(0, dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"])
    return tensors, metadata


def tolerance(definition_name):
    for key, tol in TOLERANCES.items():
        if key in definition_name:
            return tol
    return DEFAULT_TOLERANCE


def compare(x, y, atol, rtol):
    """Official element rule in fp32; returns (max_abs, max_rel, matched_ratio)."""
    x, y = x.float(), y.float()
    if x.numel() == 0:
        return 0.0, 0.0, 1.0
    diff = (x - y).abs()
    rel = diff / (y.abs() + 1e-8)
    both_inf = torch.isinf(x) & torch.isinf(y) & (torch.sign(x) == torch.sign(y))
    fails = (diff > atol) & (rel > rtol) & ~both_inf
    finite = torch.isfinite(diff)
    max_abs = diff[finite].max().item() if finite.any() else 0.0
    max_rel = rel[finite].max().item() if finite.any() else 0.0
    nan_mismatch = (torch.isnan(x) != torch.isnan(y)).sum().item()
    ratio = 1.0 - (fails.sum().item() + nan_mismatch) / x.numel()
    return max_abs, max_rel, ratio


def topk_scores(ns, inputs, indices):
    """Indexer scores at the given global slots (-inf for padding), sorted per row."""
    q = inputs["q_index_fp8"].float()
    k = ns["dequant_fp8_kv_cache"](inputs["k_index_cache_fp8"]).reshape(-1, q.shape[-1])
    w = inputs["weights"].float()
    idx = indices.long()
    valid = idx >= 0
    keys = k[idx.clamp(min=0)]                       # [B, topk, D]
    s = torch.relu(torch.einsum("bhd,bkd->bhk", q, keys))
    score = (s * w[:, :, None]).sum(dim=1)
    score = torch.where(valid, score, torch.full_like(score, -math.inf))
    return score.sort(dim=1, descending=True).values


def check_file(path, definitions, device):
    tensors, meta = read_safetensors(path)
    name = meta["definition"]
    definition = json.loads(next(pathlib.Path(definitions).rglob(f"{name}.json")).read_text())
    absent = set(filter(None, meta.get("absent_inputs", "").split(",")))
    args, inputs = [], {}
    for input_name, spec in definition["inputs"].items():
        if input_name in absent:
            args.append(None)
            continue
        t = tensors[f"input.{input_name}"]
        if spec["shape"] is None:
            value = t.reshape(()).item()
            args.append(int(value) if spec["dtype"].startswith("int") else float(value))
        else:
            t = t.to(device)
            args.append(t)
            inputs[input_name] = t
    ns = {}
    exec(compile(definition["reference"], f"<{name} reference>", "exec"), ns)
    start = time.time()
    out = ns["run"](*args)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.time() - start
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    atol, rtol, ratio_needed = tolerance(name)
    result = {"file": str(path), "definition": name, "workload": meta.get("workload"),
              "trial": meta.get("trial"), "variant": meta.get("variant", ""),
              "torch_seconds": round(seconds, 3), "outputs": {}, "agree": True}
    for (out_name, _), theirs in zip(definition["outputs"].items(), outs):
        ours = tensors[f"ref.{out_name}"].to(device)
        if name.startswith("dsa_topk_indexer"):
            same_sets = all(set(a.tolist()) == set(b.tolist()) for a, b in zip(ours.cpu(), theirs.cpu()))
            x, y = topk_scores(ns, inputs, ours), topk_scores(ns, inputs, theirs)
            max_abs, max_rel, ratio = compare(x, y, atol, rtol)
            entry = {"identical_sets": same_sets}
        else:
            max_abs, max_rel, ratio = compare(ours, theirs.to(ours.dtype), atol, rtol)
            entry = {}
        entry.update({"max_abs": max_abs, "max_rel": max_rel, "matched_ratio": ratio,
                      "agree": ratio >= ratio_needed and ours.shape == theirs.shape})
        result["outputs"][out_name] = entry
        result["agree"] &= entry["agree"]
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--definitions", required=True, help="folder with the definition JSON files")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", help="write all results to this JSON file")
    args = parser.parse_args()
    results = []
    for f in args.files:
        r = check_file(f, args.definitions, args.device)
        results.append(r)
        outs = "  ".join(f"{k}: abs {v['max_abs']:.3g} rel {v['max_rel']:.3g} matched {v['matched_ratio']:.6f}"
                         for k, v in r["outputs"].items())
        print(f"{'AGREE' if r['agree'] else 'DIFFER'}  {r['definition']}  workload {r['workload']} "
              f"trial {r['trial']}{' variant ' + r['variant'] if r['variant'] else ''}  {outs}", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"torch": torch.__version__, "device": args.device,
                                                        "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else None,
                                                        "results": results}, indent=2))
    agree = sum(r["agree"] for r in results)
    print(f"{agree} passed, {len(results) - agree} failed")
    sys.exit(0 if agree == len(results) else 1)


if __name__ == "__main__":
    main()
