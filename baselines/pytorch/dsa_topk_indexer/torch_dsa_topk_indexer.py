"""Vectorised PyTorch DSA top-k indexer -- a readable baseline, NOT a production peer.

Definition: dsa_topk_indexer_fp8_h64_d128_topk2048_ps64.
Value-returning: run(*inputs) -> topk_indices [B, 2048] int32.

Same semantics as the definition's reference, for all batch rows at once:
- K cache in deep_gemm layout: each page is 64*132 bytes, the 64 tokens' 128 fp8 (e4m3) values
  first (token-major), then their 64 fp32 scales; K[page, i, :] = fp8 * scale[page, i].
- For row b with L_b = seq_lens[b] tokens, local token j lives in page block_table[b, j // 64]
  at offset j % 64. score_j = sum_h weights[b, h] * relu(q[b, h] . K_j), fp32 throughout.
- Row b holds the min(2048, L_b) best local tokens, mapped to global slots page * 64 + offset,
  best first (torch.topk order), then -1 padding. L_b = 0 gives an all -1 row.

Vectorisation: only the pages named in block_table are gathered and dequantised (not the whole
cache, which the reference converts in full); block-table columns past a row's last page may hold
anything, so they read page 0 and their tokens are masked to -inf like every position j >= L_b.
Masked positions can still be picked by topk when L_b < 2048; they rank after every real token
and are overwritten with -1. Cost: fp32 keys B * P * 64 * 128 * 4 B (92 MB at B=31, P=91) and
scores B * 64 * P * 64 * 4 B. No host synchronisation; CUDA-graph capturable.

Ties: scores that tie exactly may come out in another order (or, at the boundary, another
member) than the reference's per-row topk; the official evaluator compares score sets, not order.
"""

import torch

NUM_HEADS = 64
HEAD_DIM = 128
PAGE_SIZE = 64
TOPK = 2048
PAGE_BYTES = PAGE_SIZE * (HEAD_DIM + 4)  # 8448: fp8 block then fp32 scale block
FP8_BYTES = PAGE_SIZE * HEAD_DIM  # 8192


def _dequant_pages(k_index_cache_fp8, pages):
    """Dequantise the pages named by `pages` [B, P] -> [B, P * 64, 128] fp32."""
    num_pages = k_index_cache_fp8.shape[0]
    cache = k_index_cache_fp8.view(torch.uint8).view(num_pages, PAGE_BYTES)  # int8 read as uint8
    raw = cache[pages]  # [B, P, 8448] bytes of the selected pages
    batch, width = pages.shape
    values = raw[..., :FP8_BYTES].view(torch.float8_e4m3fn).reshape(batch, width, PAGE_SIZE, HEAD_DIM)
    scales = raw[..., FP8_BYTES:].contiguous().view(torch.float32)  # [B, P, 64]
    keys = values.to(torch.float32) * scales[..., None]
    return keys.reshape(batch, width * PAGE_SIZE, HEAD_DIM)


def run(q_index_fp8, k_index_cache_fp8, weights, seq_lens, block_table):
    batch, width = block_table.shape
    assert q_index_fp8.shape[1:] == (NUM_HEADS, HEAD_DIM)
    assert k_index_cache_fp8.shape[1] == PAGE_SIZE and k_index_cache_fp8.shape[-1] == HEAD_DIM + 4
    device = q_index_fp8.device
    num_slots = width * PAGE_SIZE  # local token positions a row can address

    with torch.no_grad():  # the harness already disables autograd; harmless here
        lens = seq_lens.to(torch.int64).clamp(0, num_slots)  # [B]
        pages_used = (lens + PAGE_SIZE - 1) // PAGE_SIZE  # the reference reads only these columns
        column = torch.arange(width, device=device)
        pages = torch.where(column[None, :] < pages_used[:, None], block_table.to(torch.int64), 0)

        keys = _dequant_pages(k_index_cache_fp8, pages)  # [B, N, 128]
        q = q_index_fp8.to(torch.float32)  # [B, 64, 128]
        scores = torch.bmm(q, keys.transpose(1, 2))  # [B, 64, N]
        scores = (torch.relu(scores) * weights[:, :, None]).sum(dim=1)  # [B, N]

        position = torch.arange(num_slots, device=device)
        in_sequence = position[None, :] < lens[:, None]  # [B, N]
        scores = scores.masked_fill(~in_sequence, float("-inf"))

        k = min(TOPK, num_slots)  # the constraint topk <= max_num_pages * 64 makes this TOPK
        _, local = torch.topk(scores, k, dim=1)  # [B, k], best first
        global_page = torch.gather(pages, 1, local // PAGE_SIZE)
        slots = global_page * PAGE_SIZE + local % PAGE_SIZE
        rank = torch.arange(k, device=device)
        slots = torch.where(rank[None, :] < lens[:, None], slots, -1)  # rank >= L_b: padding

        topk_indices = torch.full((batch, TOPK), -1, dtype=torch.int32, device=device)
        topk_indices[:, :k] = slots.to(torch.int32)
    return topk_indices
