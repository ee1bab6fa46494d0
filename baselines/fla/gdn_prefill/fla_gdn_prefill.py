"""GDN varlen prefill through flash-linear-attention (fla-core 0.6.0), chunked Triton path.

Definition: gdn_prefill_qk4_v8_d128_k_last. Value-returning: run(*inputs) -> (output, new_state).

`fla.ops.gated_delta_rule.chunk_gated_delta_rule` takes every contest convention as an argument:

| contest                                      | fla 0.6.0 argument                                 |
| -------------------------------------------- | -------------------------------------------------- |
| g = exp(-exp(A_log) * softplus(a + dt_bias)) | g=a (raw), use_gate_in_kernel=True, A_log, dt_bias |
|                                              |   (fused into fla's chunk-cumsum kernel, log space)  |
| beta = sigmoid(b)                            | beta=b (raw), use_beta_sigmoid_in_kernel=True       |
|                                              |   (fla runs its own small sigmoid kernel -> fp32)    |
| 4 q/k heads -> 8 v heads (v head h uses h//2)| built in: every kernel reads q/k head i_hv // (HV//H) |
| k-last state [N, HV, V, K]                   | state_v_first=True (initial and final state)        |
| packed sequences, int64 cu_seqlens           | cu_seqlens= with a leading batch axis of 1          |
| state absent -> zeros                        | initial_state=None                                  |
| new_state fp32                               | output_final_state=True (fp32, zero-initialised)    |
| no q/k normalisation                         | use_qk_l2norm_in_kernel=False                       |
| scale 0 or None -> 1/sqrt(128)               | handled here (fla's default covers only None)       |

What the wrapper adds, and what it costs:
- `unsqueeze(0)` on q, k, v, a, b and `squeeze(0)` on the output: views, no copy, no launch.
- `cu_seqlens.clone()`: one 8*(N+1)-byte device copy. fla memoises the chunk tables it derives
  from cu_seqlens by *object identity* (fla.utils.tensor_cache), so a harness that rewrites the
  same tensor in place between calls would get stale tables; a fresh tensor per call makes every
  call recompute them. fla derives them with repeat_interleave, which synchronises with the host
  once per call whatever we do: this path is not CUDA-graph capturable.
- Zero-length sequences: the reference leaves their new_state at zero even when an initial state
  is given; fla's state kernel stores the (unchanged) initial state. When a state is given, one
  comparison and one masked_fill (two tiny launches, no sync) restore the reference behaviour.

First calls JIT-compile and autotune fla's kernels (autotuning runs them several times):
warm up before timing.
"""

import math

import torch
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

HEAD_SIZE = 128  # the definition's head_size; the default scale is 1/sqrt(head_size)


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
    # The contest treats scale == 0 (and None) as "use the default"; fla only knows None.
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(HEAD_SIZE)
    cu_seqlens = cu_seqlens.clone()  # fresh object: defeats fla's identity cache (see above)
    with torch.no_grad():  # the harness already disables autograd; harmless here
        output, new_state = chunk_gated_delta_rule(
            q=q.unsqueeze(0),  # [T, 4, 128] -> fla's [1, T, H, K]
            k=k.unsqueeze(0),
            v=v.unsqueeze(0),  # [1, T, 8, 128]: HV = 8 > H = 4 turns on fla's GVA indexing
            g=a.unsqueeze(0),  # raw decay input [1, T, 8]; gate formed in fla's cumsum kernel
            beta=b.unsqueeze(0),  # raw update-gate input [1, T, 8]
            scale=float(scale),
            initial_state=state,  # [N, 8, V, K] fp32 or None
            output_final_state=True,
            use_qk_l2norm_in_kernel=False,
            use_beta_sigmoid_in_kernel=True,
            state_v_first=True,
            cu_seqlens=cu_seqlens,
            # fla 0.6.0 reads these three from **kwargs (they are not named parameters).
            use_gate_in_kernel=True,
            A_log=A_log,
            dt_bias=dt_bias,
        )
        if state is not None:
            empty = cu_seqlens[1:] == cu_seqlens[:-1]  # [N] bool, on the device
            new_state.masked_fill_(empty.view(-1, 1, 1, 1), 0.0)
    return output.squeeze(0), new_state
