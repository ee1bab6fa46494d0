// The verdict of a correctness check on one call's outputs, and the options that shape it.
#pragma once

#include <string>

#include "kh/check/tolerance.h"
#include "kh/spec/trace.h"

namespace kh {

struct CheckResult {
  EvalStatus status = EvalStatus::kPassed;
  double max_absolute_error = 0;  // over compared elements; inf after a non-finite failure
  double max_relative_error = 0;
  double matched_ratio = 1;  // the lowest over checked tensors; 0 when the check stopped early
  /// The first failure, human readable: output name, multi-dimensional index, solution value,
  /// reference value. Empty when the check passed.
  std::string message;
  /// The official evaluator returns at once on a shape or dtype mismatch, a non-finite solution
  /// value or an invalid top-k index, whereas a tolerance failure lets the remaining tensors and
  /// trials run. A terminal result ends the fold (see accumulate()).
  bool terminal = false;

  bool passed() const { return status == EvalStatus::kPassed; }
};

struct CheckOptions {
  Tolerance tolerance = kDefaultTolerance;
  /// Apply the official rules alone. kh's one relaxation (an infinity in the solution equal to
  /// the reference's infinity at the same position is accepted) is then switched off.
  bool official = false;
};

/// Folds `next` (a later tensor of the same call, or a later trial) into `total` the way the
/// official evaluator does: a terminal result replaces everything before it and stops the fold;
/// tolerance failures accumulate (status INCORRECT_NUMERICAL, the first failure's message kept),
/// max errors are the maxima (NaN ignored, as Python's max(0.0, nan) drops it), the matched ratio
/// is the minimum.
void accumulate(CheckResult& total, const CheckResult& next);

/// "[1, 0, 5]": the row-major multi-dimensional index of flat element `flat`.
std::string index_string(const Shape& shape, std::int64_t flat);

}  // namespace kh
