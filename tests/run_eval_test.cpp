// The evaluation path end to end on the cpu backend, through the real kh binary: builds, worker
// processes, strict checks. Planted faults must be caught with the right status, a crash must
// cost only its worker, and the CPU references wrapped as a candidate must pass official
// workloads. GPU versions of these checks live in the `gpu`-labelled tests.
#include <cstdio>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include "kh/core/json_io.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

test::KhEval eval(const std::string& args) {
  return test::run_kh_eval("" + args);
}

std::string decode_fault(const std::string& fault, const std::string& extra = "") {
  return (test::source_dir() / "tests/candidates/gdn_decode_cpp").string() +
         " --param FAULT=" + fault + " -w 0 --trials 2 " + extra;
}

TEST(EvalCpu, CorrectCandidatePasses) {
  const test::KhEval e = eval(decode_fault("none", "-w 20"));
  EXPECT_EQ(e.run.status, 0) << e.run.out;
  EXPECT_EQ(e.status(0), "PASSED");
  EXPECT_EQ(e.status(1), "PASSED");
  EXPECT_FALSE(e.result(0).at("nondeterministic").get<bool>());
  // Where the trials' time went: every phase present, the calls measurable, and together no
  // more than the workload took.
  const Json& phases = e.result(0).at("trial_phase_seconds");
  double sum = 0;
  for (const char* phase : {"inputs", "buffers", "reference", "calls", "checks", "worker"}) {
    ASSERT_TRUE(phases.contains(phase)) << phases.dump();
    EXPECT_GE(phases.at(phase).get<double>(), 0) << phase;
    sum += phases.at(phase).get<double>();
  }
  EXPECT_GT(phases.at("calls").get<double>(), 0);
  EXPECT_LE(sum, e.result(0).at("seconds").get<double>() * 1.001 + 1e-3);
}

// --workloads FILE: shapes beyond the official set (batch 3 with scale 0, meaning 1/sqrt(128)),
// selected by index inside the file; a file of another definition's workloads is refused.
TEST(EvalCpu, WorkloadsFromAFileBeyondTheOfficialSet) {
  const std::string extra =
      (test::source_dir() / "tests/data/extra_shapes" / (kDecode + ".jsonl")).string();
  const test::KhEval e = eval((test::source_dir() / "tests/candidates/gdn_decode_cpp").string() +
                              " --trials 1 --workloads " + extra + " -w 2 -w 3");
  EXPECT_EQ(e.run.status, 0) << e.run.out << e.run.err;
  EXPECT_EQ(e.status(0), "PASSED");
  EXPECT_EQ(e.status(1), "PASSED");
  EXPECT_EQ(e.result(0).at("workload").get<std::string>(), "6d0de000-0000-0000-0000-000000000302");
  const test::CommandResult wrong = test::run_command(
      std::string(KH_BINARY) + " eval " +
      (test::source_dir() / "tests/candidates/dsa_topk_indexer_cpp").string() +
      " --no-store --workloads " + extra);
  EXPECT_EQ(wrong.status, 1);
  EXPECT_THAT(wrong.err, HasSubstr("is for definition gdn_decode_qk4_v8_d128_k_last, not "
                                   "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64"));
}

// A CUDA candidate on the cpu backend would get host pointers: refused up front, by name.
TEST(EvalCpu, CudaCandidateOnTheCpuBackendIsRefused) {
  const test::ScopedTempDir dir;
  for (const std::string verb : {"eval", "promote"}) {
    const test::CommandResult r = test::run_command(
        std::string(KH_BINARY) + " " + verb + " " +
        (test::source_dir() / "kernels/gdn_decode").string() + " --backend cpu --store " +
        (dir.path() / "store").string() + " --cache " +
        (test::source_dir() / "build/test-build-cache").string());
    EXPECT_EQ(r.status, 1) << verb;
    EXPECT_THAT(r.err, HasSubstr("khk_gdn_decode is a CUDA candidate")) << verb;
    EXPECT_THAT(r.err, HasSubstr("--backend cuda")) << verb;
  }
}

TEST(EvalCpu, SegfaultIsARuntimeErrorAndOnlyCostsItsWorker) {
  const test::KhEval e = eval(decode_fault("segfault", "-w 20"));
  EXPECT_EQ(e.run.status, 3);
  for (int i : {0, 1}) {  // the second workload ran in a fresh worker
    EXPECT_EQ(e.status(i), "RUNTIME_ERROR");
    EXPECT_THAT(e.message(i), HasSubstr("killed by signal 11 (SIGSEGV)"));
  }
  EXPECT_EQ(eval(decode_fault("none")).status(), "PASSED") << "the next candidate still runs";
}

TEST(EvalCpu, InfiniteLoopIsATimeout) {
  const test::KhEval e = eval(decode_fault("hang", "--call-timeout 1"));
  EXPECT_EQ(e.status(), "TIMEOUT");
  EXPECT_THAT(e.message(), HasSubstr("ran longer than 1000 ms"));
}

TEST(EvalCpu, UnwrittenOutputElementIsCaughtByPoisoning) {
  const test::KhEval e = eval(decode_fault("skip_element"));
  EXPECT_EQ(e.status(), "INCORRECT_NUMERICAL");
  EXPECT_THAT(e.message(), HasSubstr("solution is NaN"));
}

TEST(EvalCpu, WritePastTheEndIsCaughtByTheCanary) {
  const test::KhEval e = eval(decode_fault("write_past_end"));
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("wrote past the end of output 'new_state'"));
  // The official rules have no red zones: the same candidate passes there.
  EXPECT_EQ(eval(decode_fault("write_past_end", "--official")).status(), "PASSED");
}

TEST(EvalCpu, WriteIntoAnInputIsCaught) {
  const test::KhEval e = eval(decode_fault("write_input"));
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("modified input 'v'"));
}

TEST(EvalCpu, OutputCacheKeyedOnTheInputAddressIsCaught) {
  const test::KhEval e = eval(decode_fault("cache_by_address"));
  EXPECT_EQ(e.status(), "INCORRECT_NUMERICAL");
  EXPECT_THAT(e.message(), HasSubstr("anti-caching"));
  // The official rules have no anti-caching call: one trial calls the candidate once, so it
  // passes. (With several official trials, whether a trial's fresh buffers land at the previous
  // trial's addresses is up to the allocator, so the outcome would be luck.)
  const std::string once = (test::source_dir() / "tests/candidates/gdn_decode_cpp").string() +
                           " --param FAULT=cache_by_address -w 0 --trials 1 --official";
  EXPECT_EQ(eval(once).status(), "PASSED");
}

TEST(EvalCpu, NondeterminismIsAWarningNotAFailure) {
  const test::KhEval e = eval(decode_fault("nondeterministic"));
  EXPECT_EQ(e.status(), "PASSED");
  EXPECT_TRUE(e.result().at("nondeterministic").get<bool>());
}

TEST(EvalCpu, CompileErrorCarriesTheCompilerLog) {
  const test::KhEval e =
      eval((test::source_dir() / "tests/candidates/compile_error_cpp").string() + " -w 0");
  EXPECT_EQ(e.status(), "COMPILE_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("kernel.cpp"));
  EXPECT_THAT(e.message(), HasSubstr("error"));
}

TEST(EvalCpu, TopKDuplicateOnTiesIsCaught) {
  const std::string cand = (test::source_dir() / "tests/candidates/dsa_topk_indexer_cpp").string();
  // Workload 13: batch 4, 34 pages; the ties variant makes the 2048th and 2049th scores equal.
  const test::KhEval faulty =
      eval(cand + " --param FAULT=duplicate_on_ties --variant ties -w 13 --trials 1");
  EXPECT_EQ(faulty.status(), "INCORRECT_NUMERICAL");
  EXPECT_THAT(faulty.message(), HasSubstr("duplicate index"));
  EXPECT_EQ(eval(cand + " --variant ties -w 13 --trials 1").status(), "PASSED");
}

// --timing wall: the cpu backend times on the host (a flow check, not a performance number); the
// result has the host's environment and no roofline floor. On the cuda backend it is refused
// before anything runs.
TEST(EvalCpu, WallTimingTimesPassedWorkloadsOnTheHost) {
  const test::KhEval e = eval("builtin:cpu_reference -d " + kDecode +
                              " -w 0 --trials 1 --timing wall --warmup 0 --iterations 3 "
                              "--timing-trials 1");
  EXPECT_EQ(e.run.status, 0) << e.run.err;
  ASSERT_EQ(e.status(), "PASSED");
  const Json& timing = e.result().at("timing");
  EXPECT_EQ(timing.at("method"), "wall");
  EXPECT_GT(timing.at("latency_seconds").get<double>(), 0);
  EXPECT_EQ(timing.at("trials").at(0).size(), 3u);
  EXPECT_EQ(timing.at("environment").at("gpu"), "cpu");
  EXPECT_FALSE(timing.contains("floor_seconds"));

  test::ScopedTempDir store;
  const test::CommandResult cuda = test::run_command(
      "KH_MEMORY_DIR= " + std::string(KH_BINARY) + " eval builtin:cpu_reference -d " + kDecode +
      " -w 0 --backend cuda --timing wall --root " + test::source_dir().string() + " --store " +
      store.path().string());
  EXPECT_EQ(cuda.status, 1);
  EXPECT_THAT(cuda.err, HasSubstr("--timing wall needs the cpu backend; the cuda backend times "
                                  "with --timing cupti, events or graph"));
}

// The CPU references behind the candidate ABI pass official workloads: every GDN decode
// workload, the short prefills, a sample of the others (each DSA attention or MoE input set
// is 0.6-1.4 GB to draw on two cores, so one each).
TEST(EvalCpu, CpuReferencesAsCandidatesPassOfficialWorkloads) {
  const Dataset ds = Dataset::open(test::source_dir());
  struct Selection {
    std::string definition;
    std::function<bool(const Workload&)> take;
    std::size_t at_most;
  };
  const std::vector<Selection> selections = {
      {kDecode, [](const Workload&) { return true; }, 1000},
      {"gdn_prefill_qk4_v8_d128_k_last",
       [](const Workload& w) { return w.axis("total_seq_len") <= 512; }, 1000},
      {"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64",
       [](const Workload& w) { return w.axis("batch_size") <= 2 || w.axis("max_num_pages") > 80; },
       6},
      {"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
       [](const Workload& w) { return w.axis("num_tokens") == 1; }, 1},
      {"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
       [](const Workload& w) { return w.axis("seq_len") == 1; }, 1},
  };
  for (const auto& s : selections) {
    std::string args;
    std::size_t n = 0;
    for (const auto& w : ds.workloads(s.definition))
      if (n < s.at_most && s.take(w)) args += " -w " + w.uuid, ++n;
    const test::KhEval e = eval("builtin:cpu_reference -d " + s.definition + " --trials 1" + args);
    EXPECT_EQ(e.run.status, 0) << s.definition << ": " << e.run.out.substr(0, 2000);
    EXPECT_EQ(e.report.value("passed", 0u), n) << s.definition;
  }
}

}  // namespace
}  // namespace kh
