// Correctness tolerances: the element rule's absolute and relative bounds and the fraction of
// elements that must meet them. The official per-definition values live in one table
// (tolerance.cpp) so that kh and the official contest runs judge with the same numbers.
#pragma once

#include "kh/spec/definition.h"

namespace kh {

struct Tolerance {
  double atol;
  double rtol;
  double required_matched_ratio;  // a tensor fails when its matched ratio is below this
};

/// FlashInfer-Bench defaults (ResolvedEvalConfig): atol = rtol = 1e-2, every element must match.
inline constexpr Tolerance kDefaultTolerance{1e-2, 1e-2, 1.0};

/// The tolerance the official contest run uses for this definition (its per-track CLI flags);
/// definitions the table does not name get kDefaultTolerance.
Tolerance official_tolerance(const Definition& def);

}  // namespace kh
