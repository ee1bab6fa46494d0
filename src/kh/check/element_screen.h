// The element rule (element_rule.h) reduced to what decides a passing tensor: the count of
// failing elements and the error maxima, which a backend can compute where the tensors live (on
// a GPU) so that a trial whose outputs pass never brings them to the host. Whatever the screen
// cannot decide — a non-finite solution value, too few matched elements — goes to the host check,
// which alone words a failure.
#pragma once

#include <cstdint>
#include <optional>

#include "kh/check/check_result.h"

namespace kh {

/// The sums of the element rule over one tensor pair (solution, reference) of one float dtype,
/// both read as float32 and compared exactly as check_tensor compares them.
struct ElementScreen {
  std::int64_t fails = 0;        // elements with abs error > atol and rel error > rtol
  float max_absolute_error = 0;  // over elements whose error is not NaN, as in check_tensor
  float max_relative_error = 0;
  bool non_finite = false;  // an infinity or a NaN anywhere in the solution
};

/// check_tensor's verdict on a tensor of `numel` elements, from its screen, when the screen
/// decides it: a finite solution that meets the required matched ratio passes with these errors.
/// nullopt otherwise: the host check must judge (and write the message).
std::optional<CheckResult> screened_verdict(const ElementScreen& screen, std::int64_t numel,
                                            const CheckOptions& options);

}  // namespace kh
