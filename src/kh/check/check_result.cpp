#include "kh/check/check_result.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kh {
namespace {

double nan_ignoring_max(double a, double b) {
  if (std::isnan(b)) return a;
  if (std::isnan(a)) return b;
  return std::max(a, b);
}

}  // namespace

void accumulate(CheckResult& total, const CheckResult& next) {
  if (total.terminal) return;
  if (next.terminal) {
    const double ratio = std::min(total.matched_ratio, next.matched_ratio);
    total = next;
    total.matched_ratio = ratio;
    return;
  }
  if (!next.passed()) {
    if (total.passed()) total.message = next.message;
    total.status = next.status;
  }
  total.max_absolute_error = nan_ignoring_max(total.max_absolute_error, next.max_absolute_error);
  total.max_relative_error = nan_ignoring_max(total.max_relative_error, next.max_relative_error);
  total.matched_ratio = std::min(total.matched_ratio, next.matched_ratio);
}

std::string index_string(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::int64_t extent = shape[d] > 0 ? shape[d] : 1;
    index[d] = flat % extent;
    flat /= extent;
  }
  std::string s = "[";
  for (std::size_t d = 0; d < index.size(); ++d) s += (d ? ", " : "") + std::to_string(index[d]);
  return s + "]";
}

}  // namespace kh
