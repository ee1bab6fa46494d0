// The per-operator call-cost models behind kh::minimal_call_cost, and the byte counting they
// share. Internal to kh/roofline: callers use call_cost.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "kh/roofline/call_cost.h"

namespace kh::roofline {

/// Bytes of one element of a declared input or output (its declared dtype).
double element_bytes(const Definition& def, std::string_view tensor);
/// Bytes of a whole declared input or output at these axis values (0 for an empty one).
double declared_bytes(const Definition& def, const AxisValues& axes, std::string_view tensor);

/// Arithmetic of one gated delta-rule step of one head on a d x d state (see gdn_call_cost.cpp).
double delta_rule_flops(std::int64_t head_size);

CallCost dsa_sparse_attention_cost(const Definition& def, const AxisValues& axes,
                                   const InputSet& inputs);
CallCost dsa_topk_indexer_cost(const Definition& def, const AxisValues& axes,
                               const InputSet& inputs);
CallCost gdn_decode_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs);
CallCost gdn_prefill_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs);
CallCost moe_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs);

}  // namespace kh::roofline
