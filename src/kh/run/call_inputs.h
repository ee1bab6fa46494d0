// Finding one workload in a dataset, and drawing the inputs of one call. MoE weights are 1.4 GB,
// so for MoE only the experts some token routes to are drawn (the others stay zero, and no output
// depends on them).
#pragma once

#include <cstdint>
#include <string>

#include "kh/gen/input_generator.h"
#include "kh/spec/dataset.h"

namespace kh {

/// The workload with this uuid among the definition's workloads; an error naming both if absent.
Workload find_workload(const Dataset& dataset, const Definition& def, const std::string& uuid);

/// All inputs of one call of trial `trial`, materialising only what the outputs depend on.
InputSet generate_call_inputs(const InputGenerator& generator, std::int64_t trial);

}  // namespace kh
