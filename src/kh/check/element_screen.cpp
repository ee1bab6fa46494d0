#include "kh/check/element_screen.h"

#include "kh/check/element_rule.h"

namespace kh {

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
