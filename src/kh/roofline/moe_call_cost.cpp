// Call cost of the DeepSeek-V3 routed MoE on one expert-parallel rank. The expert weights (44 MB
// per expert) dominate the traffic, and only the local experts some token routes to need them, so
// the cost is computed from the routing of the call's own logits (kh/ref/moe_routing.h).
#include <cstdint>
#include <string>
#include <vector>

#include "kh/core/error.h"
#include "kh/ref/moe_routing.h"
#include "kh/ref/reference_call.h"
#include "kh/roofline/call_cost_models.h"

namespace kh::roofline {

// moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048. Routed pairs = the (token, local
// expert) pairs with the expert among the token's top 8; a token is routed if it has at least one;
// an expert is active if some token routes to it.
//
// Bytes: per ACTIVE local expert, W13 (4096 x 7168 fp8 = 29,360,128 B), its scales (32 x 56 fp32
// = 7168 B), W2 (7168 x 2048 fp8 = 14,680,064 B) and its scales (56 x 16 fp32 = 3584 B): 44,050,944
// B; per ROUTED token, its activations (7168 fp8) and their scales (56 fp32 = 224 B); all of
// routing_logits (256 fp32 per token: routing needs every logit) and routing_bias (256 bf16); the
// whole output (7168 bf16 per token; unrouted tokens get zero rows, which must be written).
// local_expert_offset and routed_scaling_factor are host scalars.
//
// FLOPs (fp8 tensor-core math): per routed pair, GEMM1 (4096 x 7168) and GEMM2 (7168 x 2048),
// 2 x (4096 x 7168 + 7168 x 2048) = 88,080,384. SwiGLU (~4 x 2048 per pair), the weighted
// accumulation and the routing (O(256) per token) are not counted.
CallCost moe_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs) {
  const std::int64_t tokens = ref::axis_value(def, axes, "seq_len");
  const std::int64_t hidden = ref::axis_value(def, axes, "hidden_size");
  const std::int64_t intermediate = ref::axis_value(def, axes, "intermediate_size");
  const std::int64_t gemm1_out = ref::axis_value(def, axes, "gemm1_out_size");
  const std::int64_t hidden_blocks = ref::axis_value(def, axes, "num_hidden_blocks");
  const std::int64_t intermediate_blocks = ref::axis_value(def, axes, "num_intermediate_blocks");
  const std::int64_t gemm1_out_blocks = ref::axis_value(def, axes, "num_gemm1_out_blocks");
  // moe_route is written for DeepSeek-V3's 256 experts in 8 groups, 32 of them local.
  ref::require_axis(def, axes, "num_experts", moe::kNumExperts);
  ref::require_axis(def, axes, "num_local_experts", moe::kLocalExperts);

  const std::int64_t offset = static_cast<std::int64_t>(ref::scalar_value(
      def.name + ": input 'local_expert_offset'", inputs.at("local_expert_offset")));
  // The selection does not depend on the scaling factor.
  const std::vector<MoeRoute> routes =
      moe_route(inputs.at("routing_logits"), inputs.at("routing_bias"), 1.0f);
  if (static_cast<std::int64_t>(routes.size()) != tokens)
    fail("{}: routing_logits has {} tokens, axis 'seq_len' is {}", def.name, routes.size(), tokens);

  bool active[moe::kLocalExperts] = {};
  std::int64_t pairs = 0, routed_tokens = 0;
  for (const MoeRoute& route : routes) {
    std::int64_t local_pairs = 0;
    for (int e : route.expert) {
      const std::int64_t local = e - offset;
      if (local < 0 || local >= moe::kLocalExperts) continue;
      active[local] = true;
      ++local_pairs;
    }
    pairs += local_pairs;
    if (local_pairs > 0) ++routed_tokens;
  }
  std::int64_t active_experts = 0;
  for (bool a : active) active_experts += a ? 1 : 0;

  const double expert_bytes =
      static_cast<double>(gemm1_out * hidden) * element_bytes(def, "gemm1_weights") +
      static_cast<double>(gemm1_out_blocks * hidden_blocks) *
          element_bytes(def, "gemm1_weights_scale") +
      static_cast<double>(hidden * intermediate) * element_bytes(def, "gemm2_weights") +
      static_cast<double>(hidden_blocks * intermediate_blocks) *
          element_bytes(def, "gemm2_weights_scale");
  const double token_bytes =
      static_cast<double>(hidden) * element_bytes(def, "hidden_states") +
      static_cast<double>(hidden_blocks) * element_bytes(def, "hidden_states_scale");
  const double pair_flops = 2.0 * static_cast<double>(gemm1_out * hidden + hidden * intermediate);

  CallCost cost;
  cost.kind = FlopKind::kFp8;
  cost.bytes = static_cast<double>(active_experts) * expert_bytes +
               static_cast<double>(routed_tokens) * token_bytes +
               declared_bytes(def, axes, "routing_logits") +
               declared_bytes(def, axes, "routing_bias") + declared_bytes(def, axes, "output");
  cost.flops = static_cast<double>(pairs) * pair_flops;
  cost.note = fmt::format(
      "{} active local experts of {} B; {} routed of {} tokens; {} routed (token, expert) pairs x "
      "{} FLOP",
      active_experts, expert_bytes, routed_tokens, tokens, pairs, pair_flops);
  return cost;
}

}  // namespace kh::roofline
