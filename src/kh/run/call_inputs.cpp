#include "kh/run/call_inputs.h"

#include <set>

#include "kh/core/error.h"
#include "kh/ref/moe_routing.h"

namespace kh {

Workload find_workload(const Dataset& dataset, const Definition& def, const std::string& uuid) {
  for (auto& w : dataset.workloads(def.name))
    if (w.uuid == uuid) return w;
  fail("{}: definition {} has no workload with uuid '{}'", dataset.root().string(), def.name, uuid);
}

InputSet generate_call_inputs(const InputGenerator& generator, std::int64_t trial) {
  if (generator.definition().name.rfind("moe_fp8_block_scale", 0) != 0)
    return generator.generate(trial);
  const std::set<std::string> weights = {"gemm1_weights", "gemm2_weights"};
  InputSet inputs = generator.generate(trial, weights);
  for (const auto& name : weights) {
    HostTensor& w = inputs.at(name);
    const std::int64_t per_expert = w.numel() / w.shape().at(0);
    for (int expert : moe_local_experts_used(inputs))
      generator.fill_range(name, trial, w, expert * per_expert, (expert + 1) * per_expert);
  }
  return inputs;
}

DrawnCallInputs generate_drawn_call_inputs(const InputGenerator& generator, std::int64_t trial) {
  DrawnCallInputs call;
  std::set<std::string> deferred;
  for (const auto& decl : generator.definition().inputs) {
    if (auto recipe = generator.recipe(decl.name, trial)) {
      call.draws.emplace(decl.name, *recipe);
      deferred.insert(decl.name);
    }
  }
  call.host = generator.generate(trial, deferred);
  return call;
}

DrawnCallInputs generate_inputs_of_call(const InputGenerator& generator, std::int64_t trial,
                                        bool draw_on_device) {
  if (draw_on_device) return generate_drawn_call_inputs(generator, trial);
  return {generate_call_inputs(generator, trial), {}};
}

}  // namespace kh
