// The GPU references, run as kernels on inputs drawn on the device, against the fp64 CPU
// references on inputs drawn on the host (label `gpu`; skipped without a device). Per definition
// the workloads are sorted by size and five spread over the range are taken (smallest, quartiles,
// largest the CPU reference affords), plus every adversarial variant on a small one.
#include <algorithm>

#include <gtest/gtest.h>

#include "kh/check/checker.h"
#include "kh/core/error.h"
#include "kh/gen/input_generator.h"
#include "kh/ref/cpu_reference.h"
#include "kh/run/call_buffers.h"
#include "kh/run/call_inputs.h"
#include "kh/run/device_reference.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

struct Case {
  const char* definition;
  std::int64_t max_cost;  // bound on the CPU reference's work, in the units of cost()
};

// cost() is the number of input elements, except for MoE, where the CPU reference's time goes
// with the tokens (the weights are fixed): tokens * 1e6.
constexpr Case kCases[] = {
    {"gdn_decode_qk4_v8_d128_k_last", std::int64_t{1} << 40},
    {"gdn_prefill_qk4_v8_d128_k_last", std::int64_t{1} << 40},
    {"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64", std::int64_t{1} << 40},
    {"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", std::int64_t{1} << 40},
    {"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", std::int64_t{100} * 1000000},
};

std::int64_t cost(const Definition& def, const Workload& w) {
  const AxisValues axes = resolve_axes(def, w, w.uuid);
  if (def.name.rfind("moe", 0) == 0) return axes.at("seq_len") * 1000000;
  std::int64_t n = 0;
  for (const auto& decl : def.inputs) n += shape_numel(def.shape_of(decl, axes));
  return n;
}

void expect_device_matches_cpu(MemoryBackend& gpu, const Definition& def, const Workload& w,
                               const std::string& variant, std::int64_t trial) {
  SCOPED_TRACE(def.name + " workload " + w.uuid + (variant.empty() ? "" : " variant " + variant));
  const InputGenerator gen(def, w, test::source_dir(), {kDefaultSeed, variant});
  DrawnCallInputs drawn = generate_drawn_call_inputs(gen, trial);
  CallBuffers buffers(gpu, def, gen.axes(), drawn.host, 0, drawn.draws);
  const OutputSet device = run_device_reference(gpu, def, gen.axes(), buffers);
  const InputSet host = generate_call_inputs(gen, trial);
  const OutputSet cpu = run_cpu_reference(def, gen.axes(), host);
  for (const CheckOptions& options : {official_options(def, false), test::reference_grade(def)}) {
    const CheckResult r = check_outputs(def, host, cpu, device, options);
    EXPECT_TRUE(r.passed()) << "at atol " << options.tolerance.atol << ", rtol "
                            << options.tolerance.rtol << ": " << r.message << " (max abs "
                            << r.max_absolute_error << ", max rel " << r.max_relative_error << ")";
  }
}

class GpuReference : public ::testing::TestWithParam<Case> {};

TEST_P(GpuReference, MatchesTheCpuReferenceAcrossShapeClassesAndVariants) {
  KH_REQUIRE_GPU();
  const std::unique_ptr<MemoryBackend> gpu = make_cuda_backend(0);
  const Dataset dataset = Dataset::open(test::source_dir());
  const Definition& def = dataset.definition(GetParam().definition);
  std::vector<Workload> workloads;
  for (const auto& w : dataset.workloads(def.name))
    if (cost(def, w) <= GetParam().max_cost) workloads.push_back(w);
  std::stable_sort(workloads.begin(), workloads.end(), [&](const Workload& a, const Workload& b) {
    return cost(def, a) < cost(def, b);
  });
  ASSERT_GE(workloads.size(), 2u);
  for (int q = 0; q <= 4; ++q)
    expect_device_matches_cpu(*gpu, def, workloads[(workloads.size() - 1) * q / 4], "", q);
  for (const auto& v : InputGenerator::variants(def)) {
    for (const auto& w : workloads) {
      try {
        generate_call_inputs(InputGenerator(def, w, test::source_dir(), {kDefaultSeed, v.name}), 0);
      } catch (const Error&) {
        continue;
      }
      expect_device_matches_cpu(*gpu, def, w, v.name, 5);
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDefinitions, GpuReference, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           std::string name = info.param.definition;
                           return name.substr(0, name.find('_', name.find('_') + 1));
                         });

}  // namespace
}  // namespace kh
