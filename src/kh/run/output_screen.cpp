#include "kh/run/output_screen.h"

#include "kh/check/checker.h"
#include "kh/check/element_rule.h"

namespace kh {
namespace {

std::int64_t numel_of(const DLTensor& t) {
  std::int64_t n = 1;
  for (std::int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

}  // namespace

std::optional<CheckResult> screen_outputs(MemoryBackend& backend, const Definition& def,
                                          const CallBuffers& buffers,
                                          const ResidentOutputs& reference,
                                          const CheckOptions& options) {
  const CheckPolicy policy = policy_for(def);
  if (policy == CheckPolicy::kTopKSet) return std::nullopt;
  // The host check refuses a sparse attention definition without both outputs; let it.
  if (policy == CheckPolicy::kSparseAttention &&
      (!def.find_output("output") || !def.find_output("lse")))
    return std::nullopt;
  const auto atol = static_cast<float>(options.tolerance.atol);  // as check_tensor compares
  const auto rtol = static_cast<float>(options.tolerance.rtol);
  CheckResult total;
  for (std::size_t i = 0; i < def.outputs.size(); ++i) {
    const DLTensor& solution = buffers.tensors().at(buffers.input_count() + i);
    const DLTensor& expected = reference.tensors().at(i);
    const std::int64_t n = numel_of(solution);
    const auto screen =
        backend.screen(solution.data, expected.data, def.outputs[i].dtype, n, atol, rtol);
    if (!screen) return std::nullopt;
    const auto verdict = screened_verdict(*screen, n, options);
    if (!verdict) return std::nullopt;
    accumulate(total, *verdict);
  }
  return total;
}

}  // namespace kh
