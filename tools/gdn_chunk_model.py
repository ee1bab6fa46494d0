#!/usr/bin/env python3
"""Numerics model of kernels/gdn_prefill's chunked route, against the token-by-token recurrence.

The kernel computes the gated delta rule in chunks of 64 tokens (kernels/gdn_prefill/
route_chunked.cuh has the algebra) with bf16 tensor-core operands. This script replays that
algebra in numpy, rounding each computed operand where the kernel rounds it, and reports the
largest error of the output and the final state against a float64 recurrence, with the fraction
of elements that miss the official tolerance (|x - y| > 1e-2 and |x - y| / |y| > 1e-2). It is how
the SPLIT_OPERANDS knob's levels were chosen (kernels/gdn_prefill/tuning.h):

  none   every computed operand one bf16 (8 mantissa bits)
  state  the state path's operands as bf16 hi + lo (~16 bits): M in M W^T, Tw, Tu, and the
         pseudo-values in the state update; W stays one bf16
  all    also the output path: M in M Q^T, the pseudo-values and P in Vn^T P^T

Inputs follow kh's generator (src/kh/gen/operators/gdn_inputs.cpp): unit-norm q and k, v ~ N(0,1),
state ~ N(0, 0.1^2), A_log in [0, ln 16], dt_bias in [-6.907, -2.252]; `--extreme` scales v and
the state by 1e3 and the gate pre-activations by 10, like the `extreme` variant.

Usage: tools/gdn_chunk_model.py [--tokens T ...] [--extreme] [--seed S] [--A-log X] [--dt-bias Y]
Needs numpy only. One (sequence, head) per run; a 2048-token case takes a few seconds.
"""
import argparse
import math

import numpy as np

CHUNK = 64
SPLIT_SITES = {  # computed operands held as hi + lo per SPLIT_OPERANDS level
    "none": set(),
    "state": {"M_in_W", "Tw", "Tu", "Vn_in_update"},
    "all": {"M_in_W", "Tw", "Tu", "Vn_in_update", "M_in_Q", "Vn_in_P", "P"},
}


def bf16(x):
    """Round float32 to bf16 (nearest even), returned as float32."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)


def split(x):
    """bf16 hi + lo: what a pair of bf16 MMAs carries of an fp32 operand."""
    hi = bf16(x)
    return hi + bf16(np.asarray(x, np.float32) - hi)


def gates(A_log, a, dt_bias, b):
    x = a + dt_bias
    softplus = np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))
    return -np.exp(A_log) * softplus, 1 / (1 + np.exp(-b))  # log g, beta


def recurrent(q, k, v, S0, log_g, beta, scale):
    """The reference recurrence in float64; S is [K][V]."""
    S = S0.astype(np.float64).copy()
    out = np.zeros((q.shape[0], v.shape[1]))
    for t in range(q.shape[0]):
        S = math.exp(log_g[t]) * S
        kt = k[t].astype(np.float64)
        S = S + np.outer(kt, beta[t] * (v[t] - kt @ S))
        out[t] = scale * (q[t] @ S)
    return out, S


def chunked(q, k, v, S0, log_g, beta, scale, level):
    """The kernel's chunked algebra; M = S^T is [V][K] as in the kernel."""
    sites = SPLIT_SITES[level]
    rnd = lambda site, x: split(x) if site in sites else bf16(x)  # noqa: E731
    M = S0.T.astype(np.float32).copy()
    out = np.zeros((q.shape[0], v.shape[1]), np.float32)
    lower_incl = np.tril(np.ones((CHUNK, CHUNK), bool))
    lower = np.tril(np.ones((CHUNK, CHUNK), bool), -1)
    for c0 in range(0, q.shape[0], CHUNK):
        n = min(CHUNK, q.shape[0] - c0)
        K, Q, V = (np.zeros((CHUNK, x.shape[1]), np.float32) for x in (k, q, v))
        K[:n], Q[:n], V[:n] = k[c0:c0 + n], q[c0:c0 + n], v[c0:c0 + n]
        lg, bt = np.zeros(CHUNK, np.float32), np.zeros(CHUNK, np.float32)
        lg[:n], bt[:n] = log_g[c0:c0 + n], beta[c0:c0 + n]
        gamma = np.cumsum(lg).astype(np.float32)
        Gamma = np.where(lower_incl, np.exp(np.where(lower_incl, gamma[:, None] - gamma[None, :], 0)), 0)
        A = np.where(lower, bt[:, None] * (K @ K.T) * Gamma, 0).astype(np.float32)
        X = np.linalg.inv(np.eye(CHUNK) + A.astype(np.float64)).astype(np.float32)  # ~fp32 (3xTF32)
        Tw = rnd("Tw", X * (bt * np.exp(gamma))[None, :])
        Tu = rnd("Tu", X * bt[None, :])
        W = bf16(Tw @ K)
        P = rnd("P", (Q @ K.T) * Gamma)
        Vn = V.T @ Tu.T - rnd("M_in_W", M) @ W.T
        O = (rnd("M_in_Q", M) @ Q.T) * np.exp(gamma)[None, :] + rnd("Vn_in_P", Vn) @ P.T
        out[c0:c0 + n] = (scale * O.T)[:n]
        fac = np.exp(gamma[n - 1] - gamma)
        fac[n:] = 0
        M = math.exp(gamma[n - 1]) * M + rnd("Vn_in_update", Vn * fac[None, :]) @ K
    return out, M.T


def failing_fraction(x, y):
    e = np.abs(x - y)
    return float(np.mean((e > 1e-2) & (e / (np.abs(y) + 1e-8) > 1e-2)))


def draw_inputs(T, extreme, seed, A_log, dt_bias):
    """One (sequence, head) as kh's generator draws it: q, k, v, S0 ([K][V]), log g, beta, scale."""
    magnitude = 1e3 if extreme else 1.0
    rng = np.random.default_rng(seed)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    q, k = bf16(unit(rng.standard_normal((T, 128)))), bf16(unit(rng.standard_normal((T, 128))))
    v = bf16(rng.standard_normal((T, 128)) * magnitude)
    S0 = (rng.standard_normal((128, 128)) * 0.1 * magnitude).astype(np.float32)
    a = bf16(rng.standard_normal(T) * (10 if extreme else 1))
    b = bf16(rng.standard_normal(T))
    log_g, beta = gates(np.float32(A_log), a, np.float32(dt_bias), b)
    return q, k, v, S0, log_g, beta, 1 / math.sqrt(128)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, nargs="+", default=[64, 300, 2048])
    p.add_argument("--extreme", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--A-log", type=float, default=0.0, help="0: the weakest decay (longest memory)")
    p.add_argument("--dt-bias", type=float, default=-6.907)
    args = p.parse_args()
    print("tokens  level  output max err  fail frac   state max err  fail frac")
    for T in args.tokens:
        q, k, v, S0, log_g, beta, scale = draw_inputs(T, args.extreme, args.seed, args.A_log,
                                                      args.dt_bias)
        ref_o, ref_S = recurrent(q, k, v, S0, log_g, beta, scale)
        for level in ("none", "state", "all"):
            o, S = chunked(q, k, v, S0, log_g.astype(np.float32), beta.astype(np.float32), scale, level)
            o = bf16(o)
            print(f"{T:6d}  {level:5s}  {np.abs(o - ref_o).max():14.2e}  {failing_fraction(o, ref_o):9.4f}"
                  f"   {np.abs(S - ref_S).max():13.2e}  {failing_fraction(S, ref_S):9.4f}")


if __name__ == "__main__":
    main()
