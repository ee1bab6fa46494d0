// The default correctness policy (official DefaultEvaluator): every declared output, in the
// definition's order, under the element rule.
#pragma once

#include "kh/check/check_result.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh {

/// Checks the declared outputs in order with check_tensor() and folds them with accumulate().
/// A declared output the solution lacks gets `missing_status` (terminal). A declared output the
/// reference lacks is a harness error (kh::Error).
CheckResult check_declared_outputs(const Definition& def, const OutputSet& reference,
                                   const OutputSet& solution, const CheckOptions& options,
                                   EvalStatus missing_status);

/// The default policy. A missing solution output is RUNTIME_ERROR, as the official output
/// normalization raises on a wrong output count.
CheckResult check_default(const Definition& def, const InputSet& inputs, const OutputSet& reference,
                          const OutputSet& solution, const CheckOptions& options);

}  // namespace kh
