// Call costs of the two Gated Delta Net operators. Both stream an fp32 128 x 128 state per
// (sequence, value head) in and out; decode is purely bandwidth-bound, prefill adds per-token
// traffic and the arithmetic of the recurrence over every token.
#include <cstdint>
#include <string>
#include <vector>

#include "kh/core/error.h"
#include "kh/ref/reference_call.h"
#include "kh/roofline/call_cost_models.h"

namespace kh::roofline {

// One token of one value head, with M the d x d state (indexed [v, k]), k, q, v d-vectors and g,
// beta scalars, in the cheapest order that gives the reference's result:
//   M~ = g M                 d^2 multiplies          (every element of M' depends on g M)
//   u  = M~ k                2 d^2 (multiply + add)
//   delta = beta (v - u)     2 d
//   M' = M~ + delta k^T      2 d^2 (outer product + add)
//   o  = scale (M' q)        2 d^2 + d
// = 7 d^2 + 3 d (115,072 at d = 128). The gates g = exp(-exp(A_log) softplus(a + dt_bias)) and
// beta = sigmoid(b) are a few transcendental operations per (token, head) and are not counted.
// The count does not change when the initial state is absent (zero): a kernel could skip the first
// token's decay and prediction, but that saves 3 d^2 once per sequence, not per token.
double delta_rule_flops(std::int64_t head_size) {
  const double d = static_cast<double>(head_size);
  return 7.0 * d * d + 3.0 * d;
}

// gdn_decode_qk4_v8_d128_k_last: one token per batch element.
//
// Bytes: state read (B x 8 x 128 x 128 fp32 = 524,288 B per batch element) when given; an absent
// state is zeros and costs nothing. new_state always written (524,288 B per batch element: it is a
// separate output, so the state cannot be updated in place). q, k (4 x 128 bf16 each), v
// (8 x 128 bf16), a, b (8 bf16 each) read; A_log, dt_bias (8 fp32 each) read; output (8 x 128
// bf16) written. scale is a host scalar. With a state: 1,054,752 B per batch element + 64 B.
//
// FLOPs (fp32 CUDA-core math: each (batch, head) is a matrix-vector recurrence with nothing to
// share across the batch, so tensor cores do not apply): B x 8 heads x delta_rule_flops(128).
CallCost gdn_decode_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs) {
  const std::int64_t batch = ref::axis_value(def, axes, "batch_size");
  const std::int64_t seq_len = ref::axis_value(def, axes, "seq_len");
  const std::int64_t v_heads = ref::axis_value(def, axes, "num_v_heads");
  const std::int64_t head_size = ref::axis_value(def, axes, "head_size");
  const bool has_state = inputs.find("state") != nullptr;

  CallCost cost;
  cost.kind = FlopKind::kFp32;
  for (const char* input : {"q", "k", "v", "A_log", "a", "dt_bias", "b"})
    cost.bytes += declared_bytes(def, axes, input);
  if (has_state) cost.bytes += declared_bytes(def, axes, "state");
  cost.bytes += declared_bytes(def, axes, "output") + declared_bytes(def, axes, "new_state");
  cost.flops = static_cast<double>(batch * seq_len * v_heads) * delta_rule_flops(head_size);
  cost.note = fmt::format("{} batch elements, state {}; {} (token, head) steps x {} FLOP", batch,
                          has_state ? "read" : "absent (zeros)", batch * seq_len * v_heads,
                          delta_rule_flops(head_size));
  return cost;
}

// gdn_prefill_qk4_v8_d128_k_last: sequence i covers tokens [cu_seqlens[i], cu_seqlens[i+1]); the
// reference skips a sequence of length 0 (its new_state stays zero, its initial state unread).
//
// Bytes: for every token of a sequence, q, k (4 x 128 bf16), v (8 x 128 bf16), a, b (8 bf16):
// 4128 B; the whole output (8 x 128 bf16 = 2048 B per token) written; the initial state of every
// non-empty sequence (8 x 128 x 128 fp32 = 524,288 B) read when a state is given; new_state of
// every sequence (empty ones too: zeros must be written) written; cu_seqlens, A_log, dt_bias read.
//
// FLOPs: (tokens in sequences) x 8 heads x delta_rule_flops(128), divided by the BF16 tensor-core
// rate. The recurrence run token by token is fp32 CUDA-core work, but the chunked (WY/UT) form
// that fast prefill kernels use does the bulk of it as bf16 tensor-core matrix products; it does
// more FLOPs (about 6 d^2 + 10 C d per token and head at chunk C) at a far higher rate. Counting
// the smaller recurrent count at the higher rate keeps the floor a lower bound for both forms.
// The sequential dependence along each sequence (the real limit for long sequences) is a latency,
// not a roofline term, and is not modelled.
CallCost gdn_prefill_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs) {
  const std::int64_t total_tokens = ref::axis_value(def, axes, "total_seq_len");
  const std::int64_t seqs = ref::axis_value(def, axes, "num_seqs");
  const std::int64_t q_heads = ref::axis_value(def, axes, "num_q_heads");
  const std::int64_t k_heads = ref::axis_value(def, axes, "num_k_heads");
  const std::int64_t v_heads = ref::axis_value(def, axes, "num_v_heads");
  const std::int64_t head_size = ref::axis_value(def, axes, "head_size");
  const bool has_state = inputs.find("state") != nullptr;

  const HostTensor& cu_seqlens = inputs.at("cu_seqlens");
  ref::require_tensor(def.name + ": input 'cu_seqlens'", cu_seqlens, DType::kInt64, {seqs + 1});
  const auto* cu = cu_seqlens.data<std::int64_t>();
  std::int64_t covered_tokens = 0, nonempty_seqs = 0;
  for (std::int64_t i = 0; i < seqs; ++i) {
    if (cu[i] < 0 || cu[i] > cu[i + 1] || cu[i + 1] > total_tokens)
      fail(
          "{}: cu_seqlens[{}..{}] = {}, {} is not a non-decreasing range within [0, "
          "total_seq_len = {}]",
          def.name, i, i + 1, cu[i], cu[i + 1], total_tokens);
    const std::int64_t len = cu[i + 1] - cu[i];
    covered_tokens += len;
    if (len > 0) ++nonempty_seqs;
  }

  const double token_input_bytes =
      static_cast<double>(q_heads * head_size) * element_bytes(def, "q") +
      static_cast<double>(k_heads * head_size) * element_bytes(def, "k") +
      static_cast<double>(v_heads * head_size) * element_bytes(def, "v") +
      static_cast<double>(v_heads) * (element_bytes(def, "a") + element_bytes(def, "b"));
  const double state_bytes =
      static_cast<double>(v_heads * head_size * head_size) * element_bytes(def, "state");
  CallCost cost;
  cost.kind = FlopKind::kBf16;
  cost.bytes = static_cast<double>(covered_tokens) * token_input_bytes +
               (has_state ? static_cast<double>(nonempty_seqs) * state_bytes : 0.0) +
               declared_bytes(def, axes, "cu_seqlens") + declared_bytes(def, axes, "A_log") +
               declared_bytes(def, axes, "dt_bias") + declared_bytes(def, axes, "output") +
               declared_bytes(def, axes, "new_state");
  cost.flops = static_cast<double>(covered_tokens * v_heads) * delta_rule_flops(head_size);
  cost.note = fmt::format(
      "{} tokens in {} non-empty of {} sequences, state {}; {} (token, head) steps x {} FLOP",
      covered_tokens, nonempty_seqs, seqs, has_state ? "read" : "absent (zeros)",
      covered_tokens * v_heads, delta_rule_flops(head_size));
  return cost;
}

}  // namespace kh::roofline
