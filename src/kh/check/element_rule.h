// The default per-tensor correctness check of FlashInfer-Bench (fib_eval_spec.md §3.4), with
// kh's one deliberate relaxation for infinities the reference shares.
//
// In order: shape mismatch -> INCORRECT_SHAPE; dtype mismatch -> INCORRECT_DTYPE; an infinity in
// the solution -> INCORRECT_NUMERICAL with errors inf, else a NaN in the solution ->
// INCORRECT_NUMERICAL with errors NaN; then every element pair is compared in fp32 and the
// tensor fails when too few match.
#pragma once

#include <optional>
#include <string>

#include "kh/check/check_result.h"
#include "kh/check/element_screen.h"
#include "kh/core/host_tensor.h"

namespace kh {

/// One element pair under the official rule, computed in float32 as the official evaluator does
/// after upcasting both tensors: abs = |x - y|, rel = abs / (|y| + 1e-8). The element fails iff
/// abs > atol AND rel > rtol, so a NaN or an infinite reference (NaN rel) counts as matched.
struct ElementComparison {
  float abs_error;
  float rel_error;
  bool fails;
};
ElementComparison compare_element(float solution, float reference, const Tolerance& tolerance);

/// The matched ratio as the official evaluator computes it: 1 - fails/numel, clamped to [0, 1].
double matched_ratio(std::int64_t fails, std::int64_t numel);

/// Checks one output tensor. `name` only labels messages.
///
/// kh's relaxation (options.official == false): an infinity in the solution equal to the
/// reference's value at the same position (e.g. the -inf lse of an all-padding row) is accepted
/// and counts as a matched element with zero error. The official rule rejects every infinity in
/// a solution, so with options.official it fails and the message says why. A NaN in the solution
/// always fails.
CheckResult check_tensor(const std::string& name, const HostTensor& solution,
                         const HostTensor& reference, const CheckOptions& options);

/// check_tensor's verdict on a tensor of `numel` elements from its screen (element_screen.h),
/// when the screen decides it: a finite solution that meets the required matched ratio passes
/// with these errors. nullopt otherwise: check_tensor must judge (and write the message).
std::optional<CheckResult> screened_verdict(const ElementScreen& screen, std::int64_t numel,
                                            const CheckOptions& options);

}  // namespace kh
