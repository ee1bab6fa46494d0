// Finding one workload in a dataset, and drawing the inputs of one call. MoE weights are 1.4 GB,
// so for MoE only the experts some token routes to are drawn (the others stay zero, and no output
// depends on them).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kh/gen/input_generator.h"
#include "kh/spec/dataset.h"

namespace kh {

/// The workload with this uuid among the definition's workloads; an error naming both if absent.
Workload find_workload(const Dataset& dataset, const Definition& def, const std::string& uuid);

/// All inputs of one call of trial `trial`, materialising only what the outputs depend on.
InputSet generate_call_inputs(const InputGenerator& generator, std::int64_t trial);

/// The inputs of one call for a backend that draws inputs in its own memory: every input a
/// recipe describes is left to `draws` (its host tensor is an untouched placeholder), the rest
/// (index structures, workload tensors, scalars) is drawn on the host.
struct DrawnCallInputs {
  InputSet host;
  std::map<std::string, DrawRecipe> draws;
};
DrawnCallInputs generate_drawn_call_inputs(const InputGenerator& generator, std::int64_t trial);
/// generate_drawn_call_inputs when `draw_on_device`, else generate_call_inputs with no draws.
DrawnCallInputs generate_inputs_of_call(const InputGenerator& generator, std::int64_t trial,
                                        bool draw_on_device);

}  // namespace kh
