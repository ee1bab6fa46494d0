#include "kh/check/tolerance.h"

#include <string_view>

namespace kh {
namespace {

struct ToleranceRule {
  std::string_view name_substring;  // matched anywhere in the definition name
  Tolerance tolerance;
};

// The official contest's per-track overrides (starter kit EVALUATION.md: MoE runs with
// `--atol 1 --rtol 0.3 --required-matched-ratio 0.9`; every other track uses the defaults). The
// substring is the one the official LowBit evaluator is selected by.
constexpr ToleranceRule kOfficialToleranceRules[] = {
    {"moe_fp8_block_scale", {1.0, 0.3, 0.9}},
};

}  // namespace

Tolerance official_tolerance(const Definition& def) {
  for (const auto& rule : kOfficialToleranceRules)
    if (def.name.find(rule.name_substring) != std::string::npos) return rule.tolerance;
  return kDefaultTolerance;
}

}  // namespace kh
