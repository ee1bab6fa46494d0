#include "kh/check/sparse_attention_policy.h"

#include "kh/check/default_policy.h"
#include "kh/core/error.h"

namespace kh {

CheckResult check_sparse_attention(const Definition& def, const InputSet& /*inputs*/,
                                   const OutputSet& reference, const OutputSet& solution,
                                   const CheckOptions& options) {
  if (!def.find_output("output") || !def.find_output("lse"))
    fail("definition {}: the sparse attention policy expects outputs 'output' and 'lse'", def.name);
  return check_declared_outputs(def, reference, solution, options, EvalStatus::kIncorrectShape);
}

}  // namespace kh
