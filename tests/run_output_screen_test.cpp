// Judging outputs where they live (run/output_screen.h) without a GPU: a backend that screens on
// the host the way the device kernel does, element by element in float32. Where a screen
// decides, the verdict must be the host check's, errors included; whatever it cannot decide (a
// failure, a non-finite value, the top-k set policy) must be left to the host check.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include <gtest/gtest.h>

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
class ScreeningBackend final : public MemoryBackend {
 public:
  std::string name() const override { return inner_->name(); }
  DLDevice device() const override { return inner_->device(); }
  void* stream() override { return inner_->stream(); }
  void* allocate(std::size_t bytes) override { return inner_->allocate(bytes); }
  void release(void* p) override { inner_->release(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    inner_->upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    inner_->download(dst, src, bytes);
  }
  void zero(void* dst, std::size_t bytes) override { inner_->zero(dst, bytes); }
  void fill(void* dst, std::size_t bytes, const void* pattern, std::size_t n) override {
    inner_->fill(dst, bytes, pattern, n);
  }
  std::uint64_t digest(const void* src, std::size_t bytes) override {
    return inner_->digest(src, bytes);
  }
  std::optional<ElementScreen> screen(const void* solution, const void* reference, DType dtype,
                                      std::int64_t numel, float atol, float rtol) override {
    ++screens;
    if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return std::nullopt;
    auto at = [&](const void* p, std::int64_t i) {
      if (dtype == DType::kFloat32) return static_cast<const float*>(p)[i];
      return bf16_bits_to_float(static_cast<const std::uint16_t*>(p)[i]);
    };
    ElementScreen s;
    const Tolerance tolerance{atol, rtol, 1.0};
    for (std::int64_t i = 0; i < numel; ++i) {
      const float x = at(solution, i), y = at(reference, i);
      s.non_finite |= !std::isfinite(x);
      const ElementComparison c = compare_element(x, y, tolerance);
      s.fails += c.fails;
      if (!std::isnan(c.abs_error))
        s.max_absolute_error = std::max(s.max_absolute_error, c.abs_error);
      if (!std::isnan(c.rel_error))
        s.max_relative_error = std::max(s.max_relative_error, c.rel_error);
    }
    return s;
  }
  void synchronize() override {}

  int screens = 0;

 private:
  std::unique_ptr<MemoryBackend> inner_ = make_cpu_backend();
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
