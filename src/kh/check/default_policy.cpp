#include "kh/check/default_policy.h"

#include <fmt/format.h>

#include "kh/check/element_rule.h"
#include "kh/core/error.h"

namespace kh {

CheckResult check_declared_outputs(const Definition& def, const OutputSet& reference,
                                   const OutputSet& solution, const CheckOptions& options,
                                   EvalStatus missing_status) {
  CheckResult total;
  for (const TensorDecl& output : def.outputs) {
    const HostTensor* expected = reference.find(output.name);
    if (!expected)
      fail("definition {}: the reference outputs have no tensor '{}'", def.name, output.name);
    const HostTensor* actual = solution.find(output.name);
    if (!actual) {
      CheckResult missing;
      missing.status = missing_status;
      missing.matched_ratio = 0;
      missing.terminal = true;
      missing.message = fmt::format(
          "output '{}': the solution did not produce it (every declared output of "
          "{} must be written)",
          output.name, def.name);
      accumulate(total, missing);
    } else {
      accumulate(total, check_tensor(output.name, *actual, *expected, options));
    }
    if (total.terminal) break;
  }
  return total;
}

CheckResult check_default(const Definition& def, const InputSet& /*inputs*/,
                          const OutputSet& reference, const OutputSet& solution,
                          const CheckOptions& options) {
  return check_declared_outputs(def, reference, solution, options, EvalStatus::kRuntimeError);
}

}  // namespace kh
