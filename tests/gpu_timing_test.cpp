// GPU tests of the timers (label `gpu`; skipped without a device): the three methods agree on a
// single-kernel candidate within their known differences, and the official timer's failures —
// a call with no GPU activity, kernels that change between iterations — are RUNTIME_ERROR under
// cupti, with every sample kept and the call's roofline cost attached.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/run/memory_backend.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

constexpr int kIterations = 20;

test::KhEval timed(const std::string& fault, const std::string& method) {
  return test::run_kh_eval(
      "--backend cuda " + (test::source_dir() / "tests/candidates/gdn_decode_cuda").string() +
      " --param FAULT=" + fault + " -w 40 --trials 1 --timing " + method +
      " --warmup 3 --iterations " + std::to_string(kIterations) + " --timing-trials 2");
}

double latency(const test::KhEval& e) {
  return e.result().at("timing").at("latency_seconds").get<double>();
}

TEST(GpuTiming, ThreeMethodsAgreeOnASingleKernelCandidate) {
  KH_REQUIRE_GPU();
  const test::KhEval cupti = timed("none", "cupti"), events = timed("none", "events"),
                     graph = timed("none", "graph");
  for (const auto* e : {&cupti, &events, &graph}) {
    ASSERT_EQ(e->status(), "PASSED") << e->run.out.substr(0, 3000);
    const Json& t = e->result().at("timing");
    EXPECT_EQ(t.at("trials").size(), 2u);
    EXPECT_EQ(t.at("trials").at(0).size(), static_cast<std::size_t>(kIterations));
    EXPECT_GT(latency(*e), 0);
    EXPECT_GT(t.at("cost").at("bytes").get<double>(), 0);
  }
  EXPECT_EQ(cupti.result().at("timing").at("method"), "cupti");
  // cupti spans the kernel alone; events add the launch (a few microseconds) and graph replay
  // its own launch: all three within 30 % + 10 us of each other.
  const double c = latency(cupti), e = latency(events), g = latency(graph);
  EXPECT_LE(c, e * 1.05 + 1e-6) << "cupti " << c << " events " << e;
  EXPECT_NEAR(e, c, 0.3 * c + 10e-6);
  EXPECT_NEAR(g, c, 0.3 * c + 10e-6);
}

TEST(GpuTiming, ACallWithNoGpuActivityIsARuntimeErrorUnderCupti) {
  KH_REQUIRE_GPU();
  const test::KhEval e = timed("idle_after_checks", "cupti");
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("no GPU activity"));
}

TEST(GpuTiming, KernelsChangingBetweenIterationsAreARuntimeErrorUnderCupti) {
  KH_REQUIRE_GPU();
  const test::KhEval e = timed("alternate_kernels", "cupti");
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("Inconsistent kernel names"));
}

}  // namespace
}  // namespace kh
