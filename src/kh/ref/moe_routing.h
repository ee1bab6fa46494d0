// DeepSeek-V3 no-aux-loss routing of moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048,
// shared by its CPU reference and by the input generator (which materialises only the weights of
// the local experts some token routes to).
#pragma once

#include <vector>

#include "kh/core/host_tensor.h"
#include "kh/gen/input_set.h"

namespace kh {

namespace moe {
inline constexpr int kNumExperts = 256;
inline constexpr int kLocalExperts = 32;
inline constexpr int kTopK = 8;
inline constexpr int kGroups = 8;
inline constexpr int kTopKGroups = 4;
inline constexpr int kGroupSize = kNumExperts / kGroups;  // 32 contiguous experts per group
inline constexpr int kHidden = 7168;
inline constexpr int kIntermediate = 2048;
inline constexpr int kGemm1Out = 2 * kIntermediate;
inline constexpr int kBlock = 128;  // FP8 block-scale granularity along every dimension
}  // namespace moe

/// One token's routing: the 8 selected global experts, best (highest biased score) first, and
/// their combine weights (un-biased sigmoid scores normalised over the 8, times the routed
/// scaling factor).
struct MoeRoute {
  int expert[moe::kTopK];
  float weight[moe::kTopK];
};

/// Routes every token. logits: float32 [T, 256]; bias: bfloat16 [256]. Computed in float32 as
/// the definition's reference does (it decides ties); equal scores go to the lower index.
std::vector<MoeRoute> moe_route(const HostTensor& logits, const HostTensor& bias,
                                float routed_scaling_factor);

/// Sorted distinct local experts (0..31) that some token routes to, read from the inputs
/// routing_logits, routing_bias and local_expert_offset (global expert = offset + local).
std::vector<int> moe_local_experts_used(const InputSet& inputs);

}  // namespace kh
