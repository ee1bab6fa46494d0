// The DSA sparse attention policy (official DsaSparseAttentionEvaluator, fib_eval_spec.md §3.6):
// `output` and `lse` under the default element rule.
//
// kh calls every candidate in destination-passing style, where the official evaluator
// pre-allocates and checks both outputs, so `lse` must be written; a solution lacking either is
// INCORRECT_SHAPE, the status the official evaluator gives a wrong output count. The -inf lse of
// an all-padding row is judged by the element rule's infinity rule: accepted by default when the
// reference has it too, rejected with --official.
#pragma once

#include "kh/check/check_result.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh {

CheckResult check_sparse_attention(const Definition& def, const InputSet& inputs,
                                   const OutputSet& reference, const OutputSet& solution,
                                   const CheckOptions& options);

}  // namespace kh
