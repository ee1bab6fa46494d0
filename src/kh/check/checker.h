// The one entry point of correctness checking: picks the policy a definition is judged by, the
// way the official evaluator registry does (fib_eval_spec.md §3.1), and checks a call's outputs.
#pragma once

#include <string_view>

#include "kh/check/check_result.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh {

enum class CheckPolicy {
  kDefault,          // every output under the element rule
  kLowBit,           // names containing "moe_fp8_block_scale": element rule, partial match ratio
  kTopKSet,          // names starting "dsa_topk_indexer": set semantics on recomputed scores
  kSparseAttention,  // names starting "dsa_sparse_attention": output and lse, both required
};

std::string_view policy_name(CheckPolicy policy);  // "default", "lowbit", "topk_set", ...

/// The policy for a definition; an error if more than one rule matches (as officially) or if the
/// definition needs a policy kh does not implement (op_type "sampling").
CheckPolicy policy_for(const Definition& def);

/// Whether checking `solution` will read the call's inputs. Only the top-k set check does, and
/// only for a batch row whose selected set differs from the reference's (it then recomputes
/// scores from q, the K cache and the weights); the other policies judge outputs alone. Lets a
/// caller skip bringing 100 MB of device-drawn K cache to the host for a check that passes
/// without it.
bool check_reads_inputs(const Definition& def, const OutputSet& reference,
                        const OutputSet& solution);

/// Picks the policy for the definition and checks all its outputs of one call.
CheckResult check_outputs(const Definition& def, const InputSet& inputs, const OutputSet& reference,
                          const OutputSet& solution, const CheckOptions& options);

/// Options with the definition's official tolerance (tolerance.h); `official` selects the
/// official rules alone (no kh relaxation). `value_scale` is the input variant's
/// (VariantInfo::value_scale): the absolute tolerance grows with the values it scales.
CheckOptions official_options(const Definition& def, bool official, double value_scale = 1.0);

}  // namespace kh
