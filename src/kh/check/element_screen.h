// The element rule (element_rule.h) reduced to what decides a passing tensor: the count of
// failing elements and the error maxima, which a backend can compute where the tensors live (on
// a GPU) so that a trial whose outputs pass never brings them to the host. screened_verdict
// (element_rule.h) turns them into check_tensor's verdict; whatever it cannot decide — a
// non-finite solution value, too few matched elements — goes to the host check, which alone
// words a failure. Plain C++17: the CUDA side (run/cuda/device_screen.h) returns it.
#pragma once

#include <cstdint>

namespace kh {

/// The sums of the element rule over one tensor pair (solution, reference) of one float dtype,
/// both read as float32 and compared exactly as check_tensor compares them.
struct ElementScreen {
  std::int64_t fails = 0;        // elements with abs error > atol and rel error > rtol
  float max_absolute_error = 0;  // over elements whose error is not NaN, as in check_tensor
  float max_relative_error = 0;
  bool non_finite = false;  // an infinity or a NaN anywhere in the solution
};

}  // namespace kh
