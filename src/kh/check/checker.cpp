#include "kh/check/checker.h"

#include "kh/check/default_policy.h"
#include "kh/check/lowbit_policy.h"
#include "kh/check/sparse_attention_policy.h"
#include "kh/check/topk_set_policy.h"
#include "kh/core/error.h"

namespace kh {

std::string_view policy_name(CheckPolicy policy) {
  switch (policy) {
    case CheckPolicy::kDefault:
      return "default";
    case CheckPolicy::kLowBit:
      return "lowbit";
    case CheckPolicy::kTopKSet:
      return "topk_set";
    case CheckPolicy::kSparseAttention:
      return "sparse_attention";
  }
  return "unknown";
}

CheckPolicy policy_for(const Definition& def) {
  // The official sampling evaluator draws samples statistically; an element-wise check would
  // reject every correct sampler, so refuse rather than judge wrongly.
  if (def.op_type == "sampling")
    fail(
        "definition {}: op_type 'sampling' needs the sampling evaluator, which kh does not "
        "implement",
        def.name);
  const std::string_view name = def.name;
  const bool lowbit = name.find("moe_fp8_block_scale") != std::string_view::npos;
  const bool topk = name.starts_with("dsa_topk_indexer");
  const bool sparse_attention = name.starts_with("dsa_sparse_attention");
  if (int(lowbit) + int(topk) + int(sparse_attention) > 1)
    fail("definition {}: its name matches more than one correctness policy", def.name);
  if (lowbit) return CheckPolicy::kLowBit;
  if (topk) return CheckPolicy::kTopKSet;
  if (sparse_attention) return CheckPolicy::kSparseAttention;
  return CheckPolicy::kDefault;
}

bool check_reads_inputs(const Definition& def, const OutputSet& reference,
                        const OutputSet& solution) {
  return policy_for(def) == CheckPolicy::kTopKSet &&
         topk_check_scores_rows(def, reference, solution);
}

CheckResult check_outputs(const Definition& def, const InputSet& inputs, const OutputSet& reference,
                          const OutputSet& solution, const CheckOptions& options) {
  switch (policy_for(def)) {
    case CheckPolicy::kDefault:
      return check_default(def, inputs, reference, solution, options);
    case CheckPolicy::kLowBit:
      return check_lowbit(def, inputs, reference, solution, options);
    case CheckPolicy::kTopKSet:
      return check_topk_set(def, inputs, reference, solution, options);
    case CheckPolicy::kSparseAttention:
      return check_sparse_attention(def, inputs, reference, solution, options);
  }
  fail("definition {}: no correctness policy", def.name);
}

CheckOptions official_options(const Definition& def, bool official, double value_scale) {
  CheckOptions options;
  options.tolerance = official_tolerance(def);
  options.tolerance.atol *= value_scale;
  options.official = official;
  return options;
}

}  // namespace kh
