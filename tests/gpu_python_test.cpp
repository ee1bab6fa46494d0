// GPU tests of the Python worker (CTest label `gpu`; skipped with a message without a CUDA
// device): each definition's own PyTorch reference, run as a candidate, passes every official
// workload under kh's native GPU reference (the two oracles agree); fla passes every GDN
// workload; Python faults get their verdicts on torch tensors; Python candidates time with the
// cupti and graph timers on kh's stream.
//
// KH_GPU_TEST_STRIDE=k runs every k-th workload (test::official_workload_args).
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

bool python_imports(const std::string& module) {
  const char* python = std::getenv("KH_PYTHON");
  return test::run_command(std::string(python && *python ? python : "python3") + " -c 'import " +
                           module + "'")
             .status == 0;
}

class DefinitionReference : public ::testing::TestWithParam<const char*> {};

// One official call per workload (FlashInfer-Bench's rules): the GDN prefill reference steps
// token by token in Python, about a second a call.
TEST_P(DefinitionReference, AgreesWithTheNativeReferenceOnEveryOfficialWorkload) {
  KH_REQUIRE_GPU();
  const std::string def = GetParam();
  const auto [workloads, n] = test::official_workload_args(def);
  const test::KhEval e = test::run_kh_eval(
      "builtin:definition_reference -d " + def +
      " --backend cuda --oracle native --official --trials 1 --call-timeout 120" + workloads);
  EXPECT_EQ(e.run.status, 0) << e.run.out.substr(0, 4000) << e.run.err;
  EXPECT_EQ(e.report.value("passed", 0u), n);
}

INSTANTIATE_TEST_SUITE_P(
    Gpu, DefinitionReference,
    ::testing::Values("gdn_decode_qk4_v8_d128_k_last", "gdn_prefill_qk4_v8_d128_k_last",
                      "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
                      "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64",
                      "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"));

// baselines/fla/<folder>, for definition <folder>_qk4_v8_d128_k_last.
class FlaBaseline : public ::testing::TestWithParam<const char*> {};

TEST_P(FlaBaseline, PassesEveryOfficialWorkload) {
  KH_REQUIRE_GPU();
  if (!python_imports("fla")) GTEST_SKIP() << "fla is not importable (baselines/README.md)";
  const std::string folder = GetParam();
  const auto [workloads, n] = test::official_workload_args(folder + "_qk4_v8_d128_k_last");
  const test::KhEval e = test::run_kh_eval(
      (test::source_dir() / "baselines" / "fla" / folder).string() +
      " --backend cuda --trials 1 --call-timeout 120" + workloads);
  EXPECT_EQ(e.run.status, 0) << e.run.out.substr(0, 4000) << e.run.err;
  EXPECT_EQ(e.report.value("passed", 0u), n);
}

INSTANTIATE_TEST_SUITE_P(Gpu, FlaBaseline, ::testing::Values("gdn_decode", "gdn_prefill"));

test::KhEval eval_user(const std::string& args) {
  return test::run_kh_eval_on(test::source_dir() / "tests" / "data" / "user_dataset",
                              "--backend cuda " + args);
}

std::string axpy(const std::string& fault) {
  return (test::source_dir() / "tests/candidates/python_axpy").string() + " --param FAULT=" +
         fault + " -w 2";
}

TEST(GpuPythonWorker, FaultsGetTheirVerdictsOnTorchTensors) {
  KH_REQUIRE_GPU();
  EXPECT_EQ(eval_user(axpy("none")).status(), "PASSED");
  const test::KhEval raised = eval_user(axpy("raise"));
  EXPECT_EQ(raised.status(), "RUNTIME_ERROR");
  EXPECT_THAT(raised.message(), HasSubstr("planted failure in the candidate"));
  EXPECT_EQ(eval_user(axpy("wrong_shape")).status(), "INCORRECT_SHAPE");
  EXPECT_EQ(eval_user(axpy("wrong_dtype")).status(), "INCORRECT_DTYPE");
  const test::KhEval wrote = eval_user(axpy("write_input"));
  EXPECT_EQ(wrote.status(), "RUNTIME_ERROR");
  EXPECT_THAT(wrote.message(), HasSubstr("modified input 'y'"));
  const test::KhEval cached = eval_user(axpy("cache_outputs"));
  EXPECT_EQ(cached.status(), "INCORRECT_NUMERICAL");
  EXPECT_THAT(cached.message(), HasSubstr("anti-caching"));
}

TEST(GpuPythonWorker, PythonCandidatesTimeWithCuptiAndGraphs) {
  KH_REQUIRE_GPU();
  for (const char* timer : {"cupti", "graph"}) {
    for (const char* folder : {"python_axpy_dps", "python_axpy"}) {
      std::string args = (test::source_dir() / "tests/candidates" / folder).string() +
                         " -w 2 --timing " + timer + " --timing-trials 2";
      if (std::string(folder) == "python_axpy") args += " --param FAULT=none";
      const test::KhEval e = eval_user(args);
      ASSERT_EQ(e.status(), "PASSED") << timer << " " << folder << ": " << e.run.out;
      EXPECT_GT(e.result().at("timing").at("latency_seconds").get<double>(), 0)
          << timer << " " << folder;
    }
  }
}

}  // namespace
}  // namespace kh
