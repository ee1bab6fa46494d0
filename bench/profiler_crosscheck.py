#!/usr/bin/env python3
"""Cross-checks kh's cupti timer against torch.profiler on the same candidate call.

Loads a built GDN decode candidate (kh's C ABI over DLPack) with ctypes, calls it on torch tensors
of one workload's shapes with the official cold-L2 step (zero 2x L2 bytes, synchronise) before
every call, and takes the median of the candidate kernel's durations that torch.profiler (Kineto,
itself CUPTI) records over the timed calls; then runs `kh eval --timing cupti` on the same
workload and compares. Writes a result JSON.

Usage (GPU machine, repository root, after a build):
  bench/profiler_crosscheck.py --kh build/default/kh --cache build/test-build-cache \
      --workload 40 --out result.json
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys

import torch

CANDIDATE = "examples/gdn_decode_qk4_v8_d128_k_last"
DEFINITION = "gdn_decode_qk4_v8_d128_k_last"


# The DLPack structs, as the Python worker declares them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kh_tensors import DLDataType, DLDevice, DLTensor  # noqa: E402


DTYPES = {torch.bfloat16: (4, 16), torch.float32: (2, 32)}  # kDLBfloat, kDLFloat


def dltensor(t, keep):
    shape = (ctypes.c_int64 * t.dim())(*t.shape)
    keep.append(shape)
    code, bits = DTYPES[t.dtype]
    device = DLDevice(2, t.device.index or 0) if t.is_cuda else DLDevice(1, 0)
    return DLTensor(t.data_ptr(), device, t.dim(), DLDataType(code, bits, 1), shape, None, 0)


def candidate_library(kh, cache):
    out = subprocess.run([kh, "build", CANDIDATE, "--cache", cache], check=True,
                         capture_output=True, text=True).stdout
    return out.split()[-1]


def workload_batch(index):
    path = f"workloads/gdn/{DEFINITION}.jsonl"
    with open(path) as f:
        line = f.readlines()[index]
    return json.loads(line)["workload"]["axes"]["batch_size"]


def profile(library, batch, warmup, iterations):
    lib = ctypes.CDLL(library)
    entry = lib.kh_gdn_decode
    entry.argtypes = [ctypes.POINTER(DLTensor), ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_uint64]
    entry.restype = ctypes.c_int
    dev = torch.device("cuda")
    bf16 = torch.bfloat16
    q = torch.nn.functional.normalize(torch.randn(batch, 1, 4, 128, device=dev), dim=-1).to(bf16)
    k = torch.nn.functional.normalize(torch.randn(batch, 1, 4, 128, device=dev), dim=-1).to(bf16)
    tensors = [q, k, torch.randn(batch, 1, 8, 128, device=dev, dtype=bf16),
               0.1 * torch.randn(batch, 8, 128, 128, device=dev),
               torch.rand(8, device=dev), torch.randn(batch, 1, 8, device=dev, dtype=bf16),
               -4 - torch.rand(8, device=dev), torch.randn(batch, 1, 8, device=dev, dtype=bf16),
               torch.tensor(128 ** -0.5, dtype=torch.float32),
               torch.empty(batch, 1, 8, 128, device=dev, dtype=bf16),
               torch.empty(batch, 8, 128, 128, device=dev)]
    keep = []
    array = (DLTensor * len(tensors))(*[dltensor(t, keep) for t in tensors])
    stream = torch.cuda.current_stream().cuda_stream
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.int8, device=dev)

    def call():
        flush.zero_()
        torch.cuda.synchronize()
        assert entry(array, len(tensors), stream, None, 0) == 0
        torch.cuda.synchronize()

    for _ in range(warmup):
        call()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iterations):
            call()
    durations = [e.device_time for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA and "gdn_decode" in e.name]
    if len(durations) != iterations:
        raise SystemExit(f"expected {iterations} candidate kernels, profiler saw {len(durations)}")
    return statistics.median(durations) * 1e-6  # microseconds -> seconds


def kh_cupti(kh, cache, index):
    out = subprocess.run([kh, "eval", CANDIDATE, "--backend", "cuda", "--trials", "1", "-w",
                          str(index), "--timing", "cupti", "--cache", cache, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"][0]["timing"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kh", default="build/default/kh")
    p.add_argument("--cache", default=".kh/builds")
    p.add_argument("--workload", type=int, default=40)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    library = candidate_library(a.kh, a.cache)
    batch = workload_batch(a.workload)
    timing = kh_cupti(a.kh, a.cache, a.workload)
    torch_seconds = profile(library, batch, timing["config"]["warmup"],
                            timing["config"]["iterations"])
    kh_seconds = timing["latency_seconds"]
    result = {
        "what": "kh cupti timer vs torch.profiler on the GDN decode example (same kernel, same "
                "shapes, cold L2 before each call)",
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "workload_index": a.workload, "batch_size": batch,
        "kh_cupti_latency_seconds": kh_seconds,
        "kh_trial_medians_seconds": timing["trial_medians_seconds"],
        "torch_profiler_median_seconds": torch_seconds,
        "relative_difference": abs(kh_seconds - torch_seconds) / torch_seconds,
        "method": "kh: mean over 3 trials of the median of 50 CUPTI spans (official rule); torch: "
                  "median of 50 kernel durations recorded by torch.profiler (Kineto), random "
                  "inputs of the workload's shapes",
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
