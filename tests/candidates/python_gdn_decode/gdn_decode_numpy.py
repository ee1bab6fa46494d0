"""GDN decode in numpy. Without torch, kh's Python worker shows bfloat16 as raw uint16 bits."""
import numpy as np


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    bits = x.astype(np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return (rounded >> 16).astype(np.uint16)


def run(q, k, v, state, A_log, a, dt_bias, b, scale, output, new_state):
    B, _, HQ, K = q.shape
    HV = v.shape[2]
    if not scale:
        scale = 1.0 / np.sqrt(K)
    x = bf16_to_f32(a[:, 0]) + dt_bias  # [B, HV]
    softplus = np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))
    g = np.exp(-np.exp(A_log) * softplus)[:, :, None, None]
    beta = (1 / (1 + np.exp(-bf16_to_f32(b[:, 0]))))[:, :, None]
    qh = np.repeat(bf16_to_f32(q[:, 0]), HV // HQ, axis=1)  # [B, HV, K]
    kh = np.repeat(bf16_to_f32(k[:, 0]), HV // HQ, axis=1)
    vh = bf16_to_f32(v[:, 0])  # [B, HV, V]
    s = np.zeros((B, HV, K, K), np.float32) if state is None else state.transpose(0, 1, 3, 2)
    s = g * s  # [B, HV, K, V]
    old_v = np.einsum("bhk,bhkv->bhv", kh, s)
    new_v = beta * vh + (1 - beta) * old_v
    s = s + np.einsum("bhk,bhv->bhkv", kh, new_v - old_v)
    output[:, 0] = f32_to_bf16(scale * np.einsum("bhk,bhkv->bhv", qh, s))
    new_state[:] = s.transpose(0, 1, 3, 2)
