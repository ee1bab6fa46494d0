#!/usr/bin/env python3
"""Numerics model of a context-parallel GDN prefill route (issue 11), against the recurrence.

A long sequence is cut into groups of whole 64-token chunks. Each group, in parallel, computes
its affine state map S_out = A_g S_in + B_g (S is [K][V]):
  A_g = prod over the group's tokens (later on the left) of g_t (I - beta_t k_t k_t^T)  [K][K]
  B_g = the group's final state from a zero state                                        [K][V]
both with the chunked algebra of kernels/gdn_prefill (A_g is that algebra run on the identity
with zero values). A scan then fixes every group's entry state, S_{g+1} = A_g S_g + B_g, and each
group's outputs come from the chunked pass from its entry state. This script replays that in
numpy, with the chunked route's roundings (tools/gdn_chunk_model.py, SPLIT_OPERANDS level
`state`) and the scan's matrix product in one of:
  fp32    the scan in fp32 (e.g. 3xTF32 or FFMA)
  split   A_g and S as bf16 hi + lo pairs, fp32 accumulate (two or three bf16 MMAs)
  bf16    A_g and S as one bf16 each
and reports the largest error of the output and the final state against a float64 recurrence
and the fraction of elements that miss the official tolerance (1e-2 absolute and relative).
`--extreme` is kh's extreme variant (values and state x1e3, gate pre-activations x10); the
absolute tolerance then scales by 1e3 as kh's variants do (VariantInfo::value_scale).

Usage: tools/gdn_cp_model.py [--tokens T] [--group-chunks C ...] [--extreme] [--seed S]
                             [--A-log X] [--dt-bias Y]
Needs numpy only; 20000 tokens take about a minute.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdn_chunk_model import CHUNK, bf16, chunked, draw_inputs, recurrent, split  # noqa: E402

SCAN_ROUNDING = {
    "fp32": lambda x: np.asarray(x, np.float32),
    "split": split,
    "bf16": bf16,
}


def context_parallel(q, k, v, S0, log_g, beta, scale, group_chunks, scan):
    """Outputs and final state of the context-parallel route."""
    T, K = k.shape
    group = group_chunks * CHUNK
    rnd = SCAN_ROUNDING[scan]
    identity = np.eye(K, dtype=np.float32)
    S = S0.astype(np.float32)
    out = np.zeros((T, v.shape[1]), np.float32)
    for g0 in range(0, T, group):
        sl = slice(g0, min(T, g0 + group))
        args = (log_g[sl].astype(np.float32), beta[sl].astype(np.float32), scale, "state")
        # The group's map, computed before its entry state is known (in parallel in a kernel).
        _, A = chunked(q[sl], k[sl], np.zeros((sl.stop - sl.start, K), np.float32), identity, *args)
        _, B = chunked(q[sl], k[sl], v[sl], np.zeros_like(S), *args)
        # The group's outputs from its entry state (the fused pass), then the scan step.
        out[sl], _ = chunked(q[sl], k[sl], v[sl], S, *args)
        S = (rnd(A).astype(np.float64) @ rnd(S).astype(np.float64)).astype(np.float32) + B
    return out, S


def failing_fraction(x, y, atol):
    e = np.abs(x - y)
    return float(np.mean((e > atol) & (e / (np.abs(y) + 1e-8) > 1e-2)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=20000)
    p.add_argument("--group-chunks", type=int, nargs="+", default=[4, 16, 64])
    p.add_argument("--scan", nargs="+", default=["fp32", "split", "bf16"], choices=list(SCAN_ROUNDING))
    p.add_argument("--extreme", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--A-log", type=float, default=0.0, help="0: the weakest decay (longest memory)")
    p.add_argument("--dt-bias", type=float, default=-6.907)
    args = p.parse_args()
    atol = 1e-2 * (1e3 if args.extreme else 1.0)
    T = args.tokens
    q, k, v, S0, log_g, beta, scale = draw_inputs(T, args.extreme, args.seed, args.A_log,
                                                  args.dt_bias)
    ref_o, ref_S = recurrent(q, k, v, S0, log_g, beta, scale)
    print(f"{T} tokens, A_log {args.A_log}, dt_bias {args.dt_bias}{', extreme' if args.extreme else ''}:"
          f" prod g = {math.exp(float(np.sum(log_g))):.3g}")
    print("group  scan   output max err  fail frac   state max err  fail frac")
    o, S = chunked(q, k, v, S0, log_g.astype(np.float32), beta.astype(np.float32), scale, "state")
    o = bf16(o)
    print(f"{'chain':>5s}  {'-':5s}  {np.abs(o - ref_o).max():14.2e}  {failing_fraction(o, ref_o, atol):9.4f}"
          f"   {np.abs(S - ref_S).max():13.2e}  {failing_fraction(S, ref_S, atol):9.4f}")
    for chunks in args.group_chunks:
        for scan in args.scan:
            o, S = context_parallel(q, k, v, S0, log_g, beta, scale, chunks, scan)
            o = bf16(o)
            print(f"{chunks * CHUNK:5d}  {scan:5s}  {np.abs(o - ref_o).max():14.2e}"
                  f"  {failing_fraction(o, ref_o, atol):9.4f}   {np.abs(S - ref_S).max():13.2e}"
                  f"  {failing_fraction(S, ref_S, atol):9.4f}")


if __name__ == "__main__":
    main()
