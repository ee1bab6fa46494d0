"""GDN varlen prefill through fla-core 0.6.0's chunk_gated_delta_rule, capturable in a CUDA graph.

Definition: gdn_prefill_qk4_v8_d128_k_last. Value-returning: run(*inputs) -> (output, new_state).
The contest conventions map onto fla's arguments as in baselines/fla/gdn_prefill (see its
docstring); this wrapper differs in one thing.

fla derives `chunk_indices` (one (sequence, chunk) row per 64-token chunk) from cu_seqlens with
a host sync (its row count is data-dependent), so its own path cannot be captured. fla accepts
the table as an argument, and every GDN kernel that reads it sizes its grid by the table's length
and masks each row's tokens by its sequence's length. So the table is built here, on the device,
with a fixed length: an upper bound of the chunk count, ceil(T / 64) + N - 1. The real rows come
first, in fla's order; each padding row names the last non-empty sequence with a chunk index
past its end, so every token of it is masked out and the only unmasked read (the chunk's last
gate, at min(end of chunk, length) - 1) stays inside that sequence. The table is rebuilt in
every call (recorded in the graph), never cached: a harness may rewrite cu_seqlens in place.

fla's other table, chunk_offsets (the state kernel's per-sequence chunk starts), is built with
device ops already. The h buffer fla sizes by the table's length gets unwritten padding rows that
only masked-out work reads.
"""

import math

import torch
import torch.nn.functional as F
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

HEAD_SIZE = 128  # the definition's head_size; the default scale is 1/sqrt(head_size)
CHUNK = 64  # fla's chunk size for the gated delta rule


def device_chunk_indices(cu_seqlens, total_tokens):
    """[rows, 2] int64 (sequence, chunk) on cu_seqlens' device, rows = ceil(T / 64) + N - 1."""
    n = cu_seqlens.numel() - 1
    rows = max(1, (total_tokens + CHUNK - 1) // CHUNK + n - 1)
    lens = cu_seqlens[1:] - cu_seqlens[:-1]
    chunks = (lens + CHUNK - 1).div(CHUNK, rounding_mode="floor")
    offsets = F.pad(chunks.cumsum(0), (1, 0))  # [N + 1]: first row of each sequence
    total = offsets[-1]
    slots = torch.arange(rows, device=cu_seqlens.device, dtype=offsets.dtype)
    seq = (torch.searchsorted(offsets, slots, right=True) - 1).clamp_(0, n - 1)
    chunk = slots - offsets[seq]
    # Padding rows: the sequence holding the last real chunk (non-empty), chunks past its end.
    # Every index below is a 1-element tensor, never a 0-d one: indexing with a 0-d tensor reads
    # it on the host (a sync, refused during capture).
    last_row = (total - 1).clamp(min=0).view(1)
    last = (torch.searchsorted(offsets, last_row, right=True) - 1).clamp_(0, n - 1)
    pad = slots >= total
    seq = torch.where(pad, last, seq)
    chunk = torch.where(pad, chunks.index_select(0, last) + (slots - total), chunk)
    return torch.stack([seq, chunk], 1).to(cu_seqlens.dtype)


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(HEAD_SIZE)
    cu_seqlens = cu_seqlens.clone()  # fresh object: fla memoises chunk_offsets by identity
    with torch.no_grad():
        output, new_state = chunk_gated_delta_rule(
            q=q.unsqueeze(0),
            k=k.unsqueeze(0),
            v=v.unsqueeze(0),
            g=a.unsqueeze(0),
            beta=b.unsqueeze(0),
            scale=float(scale),
            initial_state=state,
            output_final_state=True,
            use_qk_l2norm_in_kernel=False,
            use_beta_sigmoid_in_kernel=True,
            state_v_first=True,
            cu_seqlens=cu_seqlens,
            chunk_indices=device_chunk_indices(cu_seqlens, q.shape[0]),
            use_gate_in_kernel=True,
            A_log=A_log,
            dt_bias=dt_bias,
        )
        if state is not None:
            empty = cu_seqlens[1:] == cu_seqlens[:-1]
            new_state.masked_fill_(empty.view(-1, 1, 1, 1), 0.0)
    return output.squeeze(0), new_state
