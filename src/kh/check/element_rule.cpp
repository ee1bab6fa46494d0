#include "kh/check/element_rule.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "kh/core/minifloat.h"

namespace kh {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The official rel denominator adds 1e-8 (a Python float added to a float32 tensor: float32).
constexpr float kRelativeEpsilon = 1e-8f;

// Elements are compared a block at a time, converted to float32 first, so that the inner loops
// are branch-free and a 100M-element MoE output checks in a fraction of a second.
constexpr std::int64_t kBlock = 4096;

// Elements [begin, begin + count) as the official evaluator's `.to(torch.float32)` gives them.
void to_float32(const HostTensor& t, std::int64_t begin, std::int64_t count, float* out) {
  switch (t.dtype()) {
    case DType::kFloat32:
      std::copy_n(t.data<float>() + begin, count, out);
      return;
    case DType::kBFloat16: {
      const std::uint16_t* bits = t.data<std::uint16_t>() + begin;
      if (count == kBlock) {  // a fixed trip count, which the compiler vectorizes at -O2
        for (std::int64_t i = 0; i < kBlock; ++i) out[i] = bf16_bits_to_float(bits[i]);
      } else {
        for (std::int64_t i = 0; i < count; ++i) out[i] = bf16_bits_to_float(bits[i]);
      }
      return;
    }
    default:
      for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(t.get(begin + i));
  }
}

inline std::int32_t bits_of(float f) {
  return std::bit_cast<std::int32_t>(f);
}

// Positions of the first non-finite solution values, by kind; -1 when there is none.
struct NonFiniteScan {
  std::int64_t first_unshared_inf = -1;  // an infinity the reference does not have there
  std::int64_t first_shared_inf = -1;    // an infinity equal to the reference's value there
  std::int64_t first_nan = -1;
};

NonFiniteScan scan_non_finite(const HostTensor& solution, const HostTensor& reference) {
  NonFiniteScan scan;
  if (!is_floating(solution.dtype())) return scan;
  const std::int64_t n = solution.numel();
  // float64 is screened before the upcast, as officially: 1e300 is finite there.
  const bool wide = solution.dtype() == DType::kFloat64;
  std::vector<float> block(kBlock);
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t count = std::min(kBlock, n - begin);
    bool all_finite = true;
    if (!wide) {
      to_float32(solution, begin, count, block.data());
      std::fill(block.begin() + count, block.end(), 0.0f);
      std::int32_t non_finite = 0;  // exponent all ones: inf or NaN
      for (std::int64_t i = 0; i < kBlock; ++i)
        non_finite |= (bits_of(block[i]) & 0x7f800000) == 0x7f800000;
      all_finite = non_finite == 0;
    }
    if (all_finite && !wide) continue;
    for (std::int64_t i = begin; i < begin + count; ++i) {
      const double s = solution.get(i);
      if (std::isfinite(s)) continue;
      if (std::isnan(s)) {
        if (scan.first_nan < 0) scan.first_nan = i;
      } else if (reference.get(i) == s) {
        if (scan.first_shared_inf < 0) scan.first_shared_inf = i;
      } else {
        scan.first_unshared_inf = i;
        return scan;  // decides the verdict on its own
      }
    }
  }
  return scan;
}

// Element i as written: narrow floats in their shortest float32 form ("1.02", not
// "1.0199999809265137"), wider types exactly.
std::string value_string(const HostTensor& t, std::int64_t i) {
  const double v = t.get(i);
  if (is_floating(t.dtype()) && t.dtype() != DType::kFloat64)
    return fmt::format("{}", static_cast<float>(v));
  return fmt::format("{}", v);
}

CheckResult terminal_failure(EvalStatus status, double error, std::string message) {
  CheckResult r;
  r.status = status;
  r.max_absolute_error = error;
  r.max_relative_error = error;
  r.matched_ratio = 0;
  r.message = std::move(message);
  r.terminal = true;
  return r;
}

}  // namespace

ElementComparison compare_element(float solution, float reference, const Tolerance& tolerance) {
  ElementComparison c;
  c.abs_error = std::fabs(solution - reference);
  c.rel_error = c.abs_error / (std::fabs(reference) + kRelativeEpsilon);
  // torch compares a float32 tensor with a Python float in float32.
  c.fails = c.abs_error > static_cast<float>(tolerance.atol) &&
            c.rel_error > static_cast<float>(tolerance.rtol);
  return c;
}

double matched_ratio(std::int64_t fails, std::int64_t numel) {
  if (numel == 0) return 1.0;
  const double ratio = 1.0 - static_cast<double>(fails) / static_cast<double>(numel);
  return std::clamp(ratio, 0.0, 1.0);
}

CheckResult check_tensor(const std::string& name, const HostTensor& solution,
                         const HostTensor& reference, const CheckOptions& options) {
  if (solution.shape() != reference.shape())
    return terminal_failure(
        EvalStatus::kIncorrectShape, 0,
        fmt::format("output '{}': solution shape {} differs from the reference's {}", name,
                    shape_string(solution.shape()), shape_string(reference.shape())));
  if (solution.dtype() != reference.dtype())
    return terminal_failure(
        EvalStatus::kIncorrectDtype, 0,
        fmt::format("output '{}': solution dtype {} differs from the reference's {}", name,
                    dtype_name(solution.dtype()), dtype_name(reference.dtype())));

  const Shape& shape = solution.shape();
  const NonFiniteScan scan = scan_non_finite(solution, reference);
  if (scan.first_unshared_inf >= 0) {
    const std::int64_t i = scan.first_unshared_inf;
    return terminal_failure(
        EvalStatus::kIncorrectNumerical, kInf,
        fmt::format("output '{}' at {}: solution {} where the reference is {}; an infinity in "
                    "a solution fails",
                    name, index_string(shape, i), value_string(solution, i),
                    value_string(reference, i)));
  }
  if (scan.first_shared_inf >= 0 && options.official) {
    const std::int64_t i = scan.first_shared_inf;
    return terminal_failure(
        EvalStatus::kIncorrectNumerical, kInf,
        fmt::format("output '{}' at {}: solution {} equals the reference's {}, but the official "
                    "rule rejects any infinity in a solution; kh accepts it by default because "
                    "the reference has the same infinity here — run without --official",
                    name, index_string(shape, i), value_string(solution, i),
                    value_string(reference, i)));
  }
  if (scan.first_nan >= 0) {
    const std::int64_t i = scan.first_nan;
    return terminal_failure(EvalStatus::kIncorrectNumerical, kNaN,
                            fmt::format("output '{}' at {}: solution is NaN where the reference "
                                        "is {}; a NaN in a solution fails",
                                        name, index_string(shape, i), value_string(reference, i)));
  }

  CheckResult r;
  const std::int64_t n = solution.numel();
  if (n == 0) return r;  // officially an empty tensor passes with zero errors
  const bool may_share_inf = scan.first_shared_inf >= 0;
  const float atol = static_cast<float>(options.tolerance.atol);
  const float rtol = static_cast<float>(options.tolerance.rtol);
  std::vector<float> x(kBlock);
  std::vector<float> y(kBlock);
  std::int64_t fails = 0;
  std::int64_t first_fail = -1;
  std::int32_t max_abs_bits = 0;
  std::int32_t max_rel_bits = 0;
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t count = std::min(kBlock, n - begin);
    to_float32(solution, begin, count, x.data());
    to_float32(reference, begin, count, y.data());
    // Zero padding (a matched pair) keeps the loops below at a fixed trip count, which the
    // compiler vectorizes at -O2.
    std::fill(x.begin() + count, x.end(), 0.0f);
    std::fill(y.begin() + count, y.end(), 0.0f);
    // Accepted shared infinities become matched pairs with zero error.
    if (may_share_inf)
      for (std::int64_t i = 0; i < count; ++i)
        if (std::isinf(x[i]) && x[i] == y[i]) x[i] = y[i] = 0;
    std::int32_t block_fails = 0;
    for (std::int64_t i = 0; i < kBlock; ++i) {
      const float abs_error = std::fabs(x[i] - y[i]);
      const float rel_error = abs_error / (std::fabs(y[i]) + kRelativeEpsilon);
      block_fails += (abs_error > atol) & (rel_error > rtol);
      // A NaN error (NaN or inf in the reference) stays out of the maxima, as officially in
      // effect. Non-negative floats order like their bit patterns, and an integer max is a
      // reduction the compiler vectorizes (a float max with NaN rules is not).
      max_abs_bits = std::max(max_abs_bits, abs_error == abs_error ? bits_of(abs_error) : 0);
      max_rel_bits = std::max(max_rel_bits, rel_error == rel_error ? bits_of(rel_error) : 0);
    }
    if (block_fails > 0 && first_fail < 0)
      for (std::int64_t i = 0; i < count && first_fail < 0; ++i)
        if (compare_element(x[i], y[i], options.tolerance).fails) first_fail = begin + i;
    fails += block_fails;
  }
  r.max_absolute_error = std::bit_cast<float>(max_abs_bits);
  r.max_relative_error = std::bit_cast<float>(max_rel_bits);
  r.matched_ratio = matched_ratio(fails, n);
  if (r.matched_ratio < options.tolerance.required_matched_ratio) {
    r.status = EvalStatus::kIncorrectNumerical;
    if (first_fail < 0) {  // only a required ratio above 1 fails a tensor without a failure
      r.message = fmt::format("output '{}': required matched ratio {} cannot be met", name,
                              options.tolerance.required_matched_ratio);
      return r;
    }
    const ElementComparison first =
        compare_element(static_cast<float>(solution.get(first_fail)),
                        static_cast<float>(reference.get(first_fail)), options.tolerance);
    r.message = fmt::format(
        "output '{}' at {}: solution {} vs reference {} (abs error {} > atol {} and rel error {} "
        "> rtol {}); {} of {} elements beyond tolerance, matched ratio {} < required {}",
        name, index_string(shape, first_fail), value_string(solution, first_fail),
        value_string(reference, first_fail), first.abs_error, options.tolerance.atol,
        first.rel_error, options.tolerance.rtol, fails, n, r.matched_ratio,
        options.tolerance.required_matched_ratio);
  }
  return r;
}

std::optional<CheckResult> screened_verdict(const ElementScreen& screen, std::int64_t numel,
                                            const CheckOptions& options) {
  if (screen.non_finite) return std::nullopt;  // the infinity and NaN rules need positions
  CheckResult r;
  if (numel == 0) return r;  // officially an empty tensor passes with zero errors
  r.matched_ratio = matched_ratio(screen.fails, numel);
  if (r.matched_ratio < options.tolerance.required_matched_ratio) return std::nullopt;
  r.max_absolute_error = screen.max_absolute_error;
  r.max_relative_error = screen.max_relative_error;
  return r;
}

}  // namespace kh
