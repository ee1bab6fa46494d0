// GPU tests (CTest label `gpu`; skipped with a message without a CUDA device): the CUDA example
// candidates pass official workloads on the cuda backend, and the CUDA versions of the planted
// faults are caught as on the cpu backend, including an out-of-bounds read that only
// compute-sanitizer sees.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include "kh/core/json_io.h"
#include "kh/run/memory_backend.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

test::KhEval eval(const std::string& args) {
  return test::run_kh_eval("--backend cuda " + args);
}

// The GPU references judge these runs, so every official workload is affordable.
class ExampleCandidate : public ::testing::TestWithParam<const char*> {};

TEST_P(ExampleCandidate, PassesOfficialWorkloads) {
  KH_REQUIRE_GPU();
  const std::string def = GetParam();
  const auto [args, n] = test::official_workload_args(def);
  const test::KhEval e =
      eval((test::source_dir() / "examples" / def).string() + " --trials 1" + args);
  EXPECT_EQ(e.run.status, 0) << e.run.out.substr(0, 4000);
  EXPECT_EQ(e.report.value("passed", 0u), n);
}

INSTANTIATE_TEST_SUITE_P(
    Gpu, ExampleCandidate,
    ::testing::Values("gdn_decode_qk4_v8_d128_k_last", "gdn_prefill_qk4_v8_d128_k_last",
                      "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
                      "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64",
                      "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"));

std::string cuda_fault(const std::string& fault, const std::string& extra = "") {
  return (test::source_dir() / "tests/candidates/gdn_decode_cuda").string() +
         " --param FAULT=" + fault + " -w 0 -w 20 --trials 2 " + extra;
}

TEST(GpuFaults, AreCaughtWithTheRightStatus) {
  KH_REQUIRE_GPU();
  EXPECT_EQ(eval(cuda_fault("none")).status(1), "PASSED");
  const test::KhEval crash = eval(cuda_fault("segfault"));
  EXPECT_EQ(crash.status(0), "RUNTIME_ERROR");
  EXPECT_EQ(crash.status(1), "RUNTIME_ERROR") << "a fresh worker after the sticky error";
  EXPECT_EQ(eval(cuda_fault("hang", "--call-timeout 2")).status(), "TIMEOUT");
  EXPECT_EQ(eval(cuda_fault("skip_element")).status(), "INCORRECT_NUMERICAL");
  const test::KhEval past = eval(cuda_fault("write_past_end"));
  EXPECT_EQ(past.status(), "RUNTIME_ERROR");
  EXPECT_THAT(past.message(), HasSubstr("wrote past the end of output"));
  const test::KhEval input = eval(cuda_fault("write_input"));
  EXPECT_EQ(input.status(), "RUNTIME_ERROR");
  EXPECT_THAT(input.message(), HasSubstr("modified input"));
  const test::KhEval cached = eval(cuda_fault("cache_by_address"));
  EXPECT_EQ(cached.status(), "INCORRECT_NUMERICAL");
  EXPECT_THAT(cached.message(), HasSubstr("anti-caching"));
}

TEST(GpuFaults, OutOfBoundsReadIsFoundOnlyBySanitize) {
  KH_REQUIRE_GPU();
  EXPECT_EQ(eval(cuda_fault("oob_read")).status(), "PASSED");
  const test::KhEval sanitized = eval(cuda_fault("oob_read", "--sanitize"));
  EXPECT_EQ(sanitized.status(), "RUNTIME_ERROR");
  EXPECT_THAT(sanitized.message(), HasSubstr("memcheck reported errors"));
}

}  // namespace
}  // namespace kh
