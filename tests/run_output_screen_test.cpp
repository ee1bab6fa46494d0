// Judging outputs where they live (run/output_screen.h) without a GPU: a backend that screens on
// the host the way the device kernel does, element by element in float32. Where a screen
// decides, the verdict must be the host check's, errors included; whatever it cannot decide (a
// failure, a non-finite value, the top-k set policy) must be left to the host check.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "backend_doubles.h"
#include "kh/check/checker.h"
#include "kh/check/element_rule.h"
#include "kh/core/minifloat.h"
#include "kh/gen/input_generator.h"
#include "kh/run/call_buffers.h"
#include "kh/run/memory_backend.h"
#include "kh/run/output_screen.h"
#include "kh/run/resident_outputs.h"
#include "test_support.h"

namespace kh {
namespace {

// The cpu backend with a host screen of float32 and bfloat16 tensors.
class ScreeningBackend final : public test::ForwardingBackend {
 public:
  std::optional<ElementScreen> screen(const void* solution, const void* reference, DType dtype,
                                      std::int64_t numel, float atol, float rtol) override {
    ++screens;
    if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return std::nullopt;
    auto at = [&](const void* p, std::int64_t i) {
      if (dtype == DType::kFloat32) return static_cast<const float*>(p)[i];
      return bf16_bits_to_float(static_cast<const std::uint16_t*>(p)[i]);
    };
    return test::host_element_screen(numel, atol, rtol, [&](std::int64_t i) {
      return std::pair{at(solution, i), at(reference, i)};
    });
  }

  int screens = 0;
};

// One GDN decode call: its reference outputs resident, and the "candidate's" outputs a copy of
// them that each test then perturbs.
struct ScreenedCall {
  ScreeningBackend backend;
  Definition def = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  Workload w = [] {
    Workload x;
    x.uuid = "output-screen";
    x.axes = {{"batch_size", 2}};
    return x;
  }();
  InputGenerator gen{def, w, test::source_dir(), {}};
  InputSet inputs = gen.generate(0);
  CallBuffers buffers{backend, def, gen.axes(), inputs, 0};
  ResidentOutputs reference{backend, def, gen.axes()};
  CheckOptions options = official_options(def, false);

  ScreenedCall() {
    // A reference with a spread of values, and a solution equal to it.
    for (std::size_t o = 0; o < def.outputs.size(); ++o) {
      const DLTensor& r = reference.tensors()[o];
      const std::int64_t n = shape_numel(def.shape_of(def.outputs[o], gen.axes()));
      for (std::int64_t i = 0; i < n; ++i) set(r, def.outputs[o].dtype, i, std::sin(0.37 * i));
      const DLTensor& s = solution(o);
      std::memcpy(s.data, r.data, storage_bytes(def.outputs[o].dtype, n));
    }
  }
  const DLTensor& solution(std::size_t o) const {
    return buffers.tensors().at(buffers.input_count() + o);
  }
  static void set(const DLTensor& t, DType dtype, std::int64_t i, double v) {
    if (dtype == DType::kFloat32)
      static_cast<float*>(t.data)[i] = static_cast<float>(v);
    else
      static_cast<std::uint16_t*>(t.data)[i] = float_to_bf16_bits(static_cast<float>(v));
  }
  void set_solution(std::size_t o, std::int64_t i, double v) {
    set(solution(o), def.outputs[o].dtype, i, v);
  }
  CheckResult host_check() {
    return check_outputs(def, inputs, reference.download(), buffers.download_outputs(), options);
  }
  std::optional<CheckResult> screened() {
    return screen_outputs(backend, def, buffers, reference, options);
  }
};

TEST(OutputScreen, APassingCallGetsTheHostChecksVerdictAndErrors) {
  ScreenedCall c;
  c.set_solution(0, 3, std::sin(0.37 * 3) + 0.004);  // within atol: still a pass
  c.set_solution(1, 10, std::sin(0.37 * 10) * 1.005);
  const auto screened = c.screened();
  ASSERT_TRUE(screened.has_value());
  const CheckResult host = c.host_check();
  ASSERT_TRUE(host.passed());
  EXPECT_TRUE(screened->passed());
  EXPECT_EQ(screened->max_absolute_error, host.max_absolute_error);
  EXPECT_EQ(screened->max_relative_error, host.max_relative_error);
  EXPECT_EQ(screened->matched_ratio, host.matched_ratio);
  EXPECT_GT(screened->max_absolute_error, 0.0);
  EXPECT_EQ(c.backend.screens, static_cast<int>(c.def.outputs.size()));
}

TEST(OutputScreen, AFailureIsLeftToTheHostCheck) {
  ScreenedCall c;
  c.set_solution(1, 7, 5.0);
  EXPECT_EQ(c.screened(), std::nullopt);
  EXPECT_FALSE(c.host_check().passed());
}

TEST(OutputScreen, ANonFiniteSolutionIsLeftToTheHostCheck) {
  ScreenedCall c;
  c.set_solution(0, 0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.screened(), std::nullopt);
  ScreenedCall d;
  d.set_solution(1, 2, std::numeric_limits<double>::infinity());
  EXPECT_EQ(d.screened(), std::nullopt);
}

TEST(OutputScreen, APartialMatchAtTheRequiredRatioPasses) {
  ScreenedCall c;
  c.options.tolerance.required_matched_ratio = 0.9;
  c.set_solution(1, 7, 5.0);  // one element of thousands beyond tolerance
  const auto screened = c.screened();
  ASSERT_TRUE(screened.has_value());
  const CheckResult host = c.host_check();
  EXPECT_TRUE(host.passed());
  EXPECT_TRUE(screened->passed());
  EXPECT_EQ(screened->matched_ratio, host.matched_ratio);
  EXPECT_LT(screened->matched_ratio, 1.0);
}

TEST(OutputScreen, TheTopKSetPolicyIsNeverScreened) {
  ScreenedCall c;
  c.def.name = "dsa_topk_indexer_screen_test";
  EXPECT_EQ(c.screened(), std::nullopt);
  EXPECT_EQ(c.backend.screens, 0);
}

TEST(OutputScreen, TheCpuBackendLeavesEveryCheckToTheHost) {
  const auto cpu = make_cpu_backend();
  float x = 1, y = 1;
  EXPECT_EQ(cpu->screen(&x, &y, DType::kFloat32, 1, 1e-2f, 1e-2f), std::nullopt);
}

}  // namespace
}  // namespace kh
