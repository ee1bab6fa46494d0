#include "kh/check/lowbit_policy.h"

#include "kh/check/default_policy.h"

namespace kh {

CheckResult check_lowbit(const Definition& def, const InputSet& /*inputs*/,
                         const OutputSet& reference, const OutputSet& solution,
                         const CheckOptions& options) {
  return check_declared_outputs(def, reference, solution, options, EvalStatus::kRuntimeError);
}

}  // namespace kh
