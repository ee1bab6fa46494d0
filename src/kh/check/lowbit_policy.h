// The low-bit policy (official LowBitEvaluator, MoE FP8 block-scale definitions): the default
// element rule under the loose MoE tolerance, where a fraction of the elements may miss it
// (fib_eval_spec.md §3.5). The result's matched_ratio is the minimum over outputs, the value the
// official evaluator records as correctness.extra.matched_ratio.
//
// Officially the required ratio falls back to 0.95 when nothing configures one; kh's tolerance
// table always configures it (0.9, the contest's MoE flag), so there is no fallback here.
#pragma once

#include "kh/check/check_result.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh {

CheckResult check_lowbit(const Definition& def, const InputSet& inputs, const OutputSet& reference,
                         const OutputSet& solution, const CheckOptions& options);

}  // namespace kh
