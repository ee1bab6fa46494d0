#include "kh/ref/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "kh/core/error.h"
#include "kh/core/minifloat.h"
#include "kh/ref/reference_call.h"

namespace kh {
namespace {

using namespace moe;

// Higher value first, ties to the lower index. A NaN ranks first (as in torch.topk) so the order
// stays a strict weak ordering whatever the inputs.
bool ranks_before(float x, int ix, float y, int iy) {
  const bool x_nan = std::isnan(x), y_nan = std::isnan(y);
  if (x_nan != y_nan) return x_nan;
  if (!x_nan && x != y) return x > y;
  return ix < iy;
}

// Indices of the k best values, best first.
template <int N>
void top_indices(const float (&values)[N], int k, int* out) {
  int order[N];
  std::iota(order, order + N, 0);
  std::partial_sort(order, order + k, order + N,
                    [&](int a, int b) { return ranks_before(values[a], a, values[b], b); });
  std::copy(order, order + k, out);
}

MoeRoute route_token(const float* logits, const float* bias, float routed_scaling_factor) {
  float s[kNumExperts], biased[kNumExperts];
  for (int e = 0; e < kNumExperts; ++e) {
    s[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    biased[e] = s[e] + bias[e];
  }
  // Group score: the sum of the group's two largest biased scores.
  float group_score[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    int top2[2];
    float members[kGroupSize];
    std::copy(biased + g * kGroupSize, biased + (g + 1) * kGroupSize, members);
    top_indices(members, 2, top2);
    group_score[g] = members[top2[0]] + members[top2[1]];
  }
  int kept_groups[kTopKGroups];
  top_indices(group_score, kTopKGroups, kept_groups);
  // Experts outside the kept groups are masked to float32's lowest value (not -inf), as in the
  // reference.
  float pruned[kNumExperts];
  std::fill(pruned, pruned + kNumExperts, std::numeric_limits<float>::lowest());
  for (int g : kept_groups)
    std::copy(biased + g * kGroupSize, biased + (g + 1) * kGroupSize, pruned + g * kGroupSize);
  MoeRoute route;
  top_indices(pruned, kTopK, route.expert);

  // Combine weights from the un-biased scores, normalised over all 8 selected experts (local or
  // not); summed in ascending expert order.
  int by_index[kTopK];
  std::copy(route.expert, route.expert + kTopK, by_index);
  std::sort(by_index, by_index + kTopK);
  float sum = 0.0f;
  for (int e : by_index) sum += s[e];
  sum += 1e-20f;
  for (int i = 0; i < kTopK; ++i)
    route.weight[i] = (s[route.expert[i]] / sum) * routed_scaling_factor;
  return route;
}

}  // namespace

std::vector<MoeRoute> moe_route(const HostTensor& logits, const HostTensor& bias,
                                float routed_scaling_factor) {
  if (logits.shape().size() != 2)
    fail("routing_logits: expected shape [seq_len, {}], got {}", kNumExperts,
         shape_string(logits.shape()));
  const std::int64_t tokens = logits.shape()[0];
  ref::require_tensor("routing_logits", logits, DType::kFloat32, {tokens, kNumExperts});
  ref::require_tensor("routing_bias", bias, DType::kBFloat16, {kNumExperts});
  float bias_f32[kNumExperts];
  for (int e = 0; e < kNumExperts; ++e)
    bias_f32[e] = bf16_bits_to_float(bias.data<std::uint16_t>()[e]);
  std::vector<MoeRoute> routes(tokens);
  for (std::int64_t t = 0; t < tokens; ++t)
    routes[t] =
        route_token(logits.data<float>() + t * kNumExperts, bias_f32, routed_scaling_factor);
  return routes;
}

std::vector<int> moe_local_experts_used(const InputSet& inputs) {
  const auto offset = static_cast<std::int64_t>(
      ref::scalar_value("input 'local_expert_offset'", inputs.at("local_expert_offset")));
  // The selection does not depend on the scaling factor; 1 keeps the weights irrelevant here.
  const auto routes = moe_route(inputs.at("routing_logits"), inputs.at("routing_bias"), 1.0f);
  bool used[kLocalExperts] = {};
  for (const auto& route : routes)
    for (int e : route.expert) {
      const std::int64_t local = e - offset;
      if (local >= 0 && local < kLocalExperts) used[local] = true;
    }
  std::vector<int> experts;
  for (int le = 0; le < kLocalExperts; ++le)
    if (used[le]) experts.push_back(le);
  return experts;
}

}  // namespace kh
