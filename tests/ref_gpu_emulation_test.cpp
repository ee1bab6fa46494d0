// The GPU references' code, run on the host by the emulating executor, against the fp64 CPU
// references: the cheapest official workloads of each definition, their median one and every
// adversarial variant, judged by the definition's official check. The same code runs as kernels
// on the device (gpu_reference_test checks that part on a GPU).
#include <algorithm>

#include <gtest/gtest.h>

#include "kh/check/checker.h"
#include "kh/core/error.h"
#include "kh/gen/input_generator.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/gpu/gpu_reference.h"
#include "kh/run/call_inputs.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

struct Case {
  const char* definition;
  std::int64_t max_input_elements;  // keeps the CPU reference (and the emulation) fast
  // An axis set smaller than in the official workloads (the size of a cache no test needs
  // whole); nullptr for none.
  const char* shrunk_axis = nullptr;
  std::int64_t shrunk_value = 0;
};

// Bounds are on the sum of input elements; they admit at least two official workloads each.
constexpr Case kCases[] = {
    {"gdn_decode_qk4_v8_d128_k_last", 1 << 22},
    {"gdn_prefill_qk4_v8_d128_k_last", 1 << 21},
    {"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64", 1 << 24, "num_pages", 96},
    // All workloads (the median one cuts a 5300-token row to 2048), with a smaller cache pool.
    {"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", 1 << 26, "num_pages", 4096},
    {"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", 1'409'600'000},
};

std::int64_t input_elements(const Definition& def, const Workload& w) {
  const AxisValues axes = resolve_axes(def, w, w.uuid);
  std::int64_t n = 0;
  for (const auto& decl : def.inputs) n += shape_numel(def.shape_of(decl, axes));
  return n;
}

// Checks one call; false (and nothing checked) if a variant does not apply to the workload.
bool check_emulation(const Definition& def, const Workload& w, const std::string& variant,
                     std::int64_t trial) {
  SCOPED_TRACE(def.name + " workload " + w.uuid + (variant.empty() ? "" : " variant " + variant));
  const InputGenerator gen(def, w, test::source_dir(), {kDefaultSeed, variant});
  InputSet inputs;
  try {
    inputs = generate_call_inputs(gen, trial);  // MoE: only the routed experts' weights
  } catch (const Error&) {
    if (variant.empty()) throw;
    return false;  // e.g. zero_length needs two sequences
  }
  const OutputSet cpu = run_cpu_reference(def, gen.axes(), inputs);
  const OutputSet emulated = gpuref::run_emulated(def, gen.axes(), inputs);
  for (const CheckOptions& options : {official_options(def, false), test::reference_grade(def)}) {
    const CheckResult r = check_outputs(def, inputs, cpu, emulated, options);
    EXPECT_TRUE(r.passed()) << "at atol " << options.tolerance.atol << ", rtol "
                            << options.tolerance.rtol << ": " << r.message << " (max abs "
                            << r.max_absolute_error << ", max rel " << r.max_relative_error << ")";
  }
  return true;
}

class GpuReferenceEmulation : public ::testing::TestWithParam<Case> {};

TEST_P(GpuReferenceEmulation, MatchesTheCpuReferenceOnCheapWorkloadsAndEveryVariant) {
  const Dataset dataset = Dataset::open(test::source_dir());
  const Definition& def = dataset.definition(GetParam().definition);
  std::vector<Workload> workloads;
  for (auto w : dataset.workloads(def.name)) {
    if (GetParam().shrunk_axis)
      for (auto& [axis, value] : w.axes)
        if (axis == GetParam().shrunk_axis) value = GetParam().shrunk_value;
    if (input_elements(def, w) <= GetParam().max_input_elements) workloads.push_back(w);
  }
  std::sort(workloads.begin(), workloads.end(), [&](const Workload& a, const Workload& b) {
    return input_elements(def, a) < input_elements(def, b);
  });
  ASSERT_GE(workloads.size(), 2u) << "raise the bound: too few workloads to test";
  const std::vector<Workload> picked = {workloads[0], workloads[1],
                                        workloads[workloads.size() / 2]};
  for (std::size_t i = 0; i < picked.size(); ++i) check_emulation(def, picked[i], "", i);
  // Each variant on the second-cheapest workload it applies to (the cheapest MoE one has no
  // local route in most trials: its outputs are zeros whatever the variant).
  for (const auto& v : InputGenerator::variants(def)) {
    bool checked = false;
    for (std::size_t i = 1; i <= workloads.size() && !checked; ++i)
      checked = check_emulation(def, workloads[i % workloads.size()], v.name, 7);
    EXPECT_TRUE(checked) << "variant " << v.name << " applies to no tested workload";
  }
}

INSTANTIATE_TEST_SUITE_P(AllDefinitions, GpuReferenceEmulation, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           std::string name = info.param.definition;
                           return name.substr(0, name.find('_', name.find('_') + 1));
                         });

TEST(GpuReference, EveryDefinitionWithACpuReferenceHasOne) {
  const Dataset dataset = Dataset::open(test::source_dir());
  for (const auto& [name, def] : dataset.definitions())
    if (find_cpu_reference(name)) {
      EXPECT_TRUE(gpuref::has_gpu_reference(name)) << name;
    }
}

}  // namespace
}  // namespace kh
