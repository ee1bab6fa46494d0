// The cpu backend's wall-clock timer (TimingMethod::kWall): the host timer keeps the interleaved
// timer's contract (pre-warmup and warmup calls, the order, errors on every result, real
// durations), and the timing and paired-timing flows run end to end through the Evaluator and
// the worker with builtin:cpu_reference, without a GPU. A GPU method on the cpu backend is refused
// with a message naming both.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/run/evaluation_record.h"
#include "kh/run/evaluator.h"
#include "kh/run/host_call_timer.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

// A call that counts its invocations and logs its index.
InterleavedTimer::Call counting(int index, int& count, std::vector<int>& log) {
  return [index, &count, &log](std::string&) {
    ++count;
    log.push_back(index);
    return 0;
  };
}

TEST(HostCallTimer, MakesThePreWarmupAndWarmupCallsThenTimesInOrder) {
  HostCallTimer timer;
  int count0 = 0, count1 = 0;
  std::vector<int> log;
  const std::vector<int> order = {0, 1, 1, 0, 1};
  const int warmup = 2;
  const auto r = timer.time_interleaved(
      TimingMethod::kWall, warmup, {counting(0, count0, log), counting(1, count1, log)}, order);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].ok()) << r[0].error;
  ASSERT_TRUE(r[1].ok()) << r[1].error;
  EXPECT_EQ(r[0].samples.size(), 2u);
  EXPECT_EQ(r[1].samples.size(), 3u);
  EXPECT_EQ(count0, kOfficialPreWarmupCalls + warmup + 2);
  EXPECT_EQ(count1, kOfficialPreWarmupCalls + warmup + 3);
  // The timed calls are the last ones made, in the order asked for.
  EXPECT_EQ(std::vector<int>(log.end() - static_cast<long>(order.size()), log.end()), order);
  for (const auto& t : r)
    for (const auto& s : t.samples) {
      EXPECT_GE(s.seconds, 0);
      EXPECT_EQ(s.sm_clock_mhz, 0);
      EXPECT_EQ(s.throttle_reasons, 0u);
      EXPECT_FALSE(s.throttled);
    }
}

// The first timed call never follows its own untimed calls (warmup_order): the call timed first
// is warmed first, so a call of another candidate comes between its warmup and its first sample.
TEST(HostCallTimer, TheCallTimedFirstIsWarmedFirst) {
  for (const std::vector<int>& order : {std::vector<int>{1, 0, 0, 1}, std::vector<int>{0, 1}}) {
    HostCallTimer timer;
    int count0 = 0, count1 = 0;
    std::vector<int> log;
    const auto r = timer.time_interleaved(
        TimingMethod::kWall, 1, {counting(0, count0, log), counting(1, count1, log)}, order);
    ASSERT_TRUE(r[0].ok()) << r[0].error;
    const auto untimed = static_cast<std::size_t>(kOfficialPreWarmupCalls + 1);
    ASSERT_EQ(log.size(), 2 * untimed + order.size());
    for (std::size_t i = 0; i < untimed; ++i) EXPECT_EQ(log[i], order[0]) << i;
    for (std::size_t i = untimed; i < 2 * untimed; ++i) EXPECT_EQ(log[i], 1 - order[0]) << i;
    EXPECT_NE(log[2 * untimed - 1], log[2 * untimed]);  // the call before the first timed one
  }
}

TEST(WarmupOrder, PutsTheFirstTimedCallFirstAndKeepsTheRestInIndexOrder) {
  EXPECT_EQ(warmup_order(3, {2, 0, 1}), (std::vector<std::size_t>{2, 0, 1}));
  EXPECT_EQ(warmup_order(3, {1, 2}), (std::vector<std::size_t>{1, 0, 2}));
  EXPECT_EQ(warmup_order(3, {0}), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(warmup_order(2, {}), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(warmup_order(1, {0, 0}), (std::vector<std::size_t>{0}));
}

TEST(HostCallTimer, AFailingCallIsReportedOnEveryResult) {
  HostCallTimer timer;
  const std::string expected = "the entry point returned status 7: boom";
  // Failing in a timed call (after its 6 + 1 untimed ones) and in an untimed one.
  for (const int fail_at : {kOfficialPreWarmupCalls + 1 + 2, 3}) {
    int calls = 0;
    auto failing = [&calls, fail_at](std::string& why) {
      if (++calls < fail_at) return 0;
      why = "boom";
      return 7;
    };
    auto fine = [](std::string&) { return 0; };
    const auto r = timer.time_interleaved(TimingMethod::kWall, 1, {fine, failing}, {0, 1, 0, 1});
    ASSERT_EQ(r.size(), 2u);
    for (const auto& t : r) {
      EXPECT_EQ(t.error, expected) << "failing at call " << fail_at;
      EXPECT_TRUE(t.samples.empty());
    }
  }
}

TEST(HostCallTimer, MeasuresTheCallsDuration) {
  HostCallTimer timer;
  auto sleeping = [](std::string&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return 0;
  };
  const auto r = timer.time_interleaved(TimingMethod::kWall, 0, {sleeping}, {0, 0, 0});
  ASSERT_TRUE(r.at(0).ok()) << r[0].error;
  ASSERT_EQ(r[0].samples.size(), 3u);
  for (const auto& s : r[0].samples) EXPECT_GE(s.seconds, 2e-3);
}

TEST(HostCallTimer, RefusesGpuMethodsAndDescribesTheHost) {
  HostCallTimer timer;
  auto fine = [](std::string&) { return 0; };
  EXPECT_THAT(test::error_of([&] { timer.time_interleaved(TimingMethod::kCupti, 0, {fine}, {0}); }),
              HasSubstr("the cupti method needs the cuda backend"));
  EXPECT_THROW(timer.time_interleaved(TimingMethod::kWall, 0, {fine}, {1}), Error);
  EXPECT_THROW(timer.time_interleaved(TimingMethod::kWall, 0, {}, {}), Error);
  const Json env = timer.environment_json();
  EXPECT_EQ(env.at("gpu"), "cpu");
  EXPECT_EQ(env.at("backend"), "cpu");
  EXPECT_FALSE(env.at("host").get<std::string>().empty());
  EXPECT_TRUE(is_cpu_environment(env));
  EXPECT_FALSE(is_cpu_environment(Json{{"gpu", "NVIDIA H200"}}));
}

// The Evaluator on the cpu backend, its worker the real kh binary, the candidate the CPU
// reference; one batch-1 decode workload.
class WallTiming : public ::testing::Test {
 protected:
  EvalOptions options(std::optional<TimingMethod> timing) const {
    EvalOptions o;
    o.root = test::source_dir();
    o.backend = "cpu";
    o.trials = 1;
    o.log_dir = logs_.path();
    o.kh_binary = KH_BINARY;  // the worker is kh, not this test binary
    o.timing = timing;
    o.timing_config = TimingConfig{1, 3, 2};
    return o;
  }
  Evaluator evaluator(std::optional<TimingMethod> timing) const {
    return Evaluator(options(timing), "builtin:cpu_reference", kDecode);
  }
  const Definition& def() const { return ds_.definition(kDecode); }
  Workload workload() const { return ds_.workloads(kDecode).at(0); }

  test::ScopedTempDir logs_;
  Dataset ds_ = Dataset::open(test::source_dir());
};

TEST_F(WallTiming, APassedWorkloadIsTimedOnTheHostWithoutAFloor) {
  Evaluator e = evaluator(TimingMethod::kWall);
  const WorkloadVerdict v = e.evaluate(def(), workload());
  ASSERT_TRUE(v.check.passed()) << v.check.message << v.log_tail;
  ASSERT_TRUE(v.timing.has_value());
  EXPECT_EQ(v.timing->method, TimingMethod::kWall);
  EXPECT_GT(v.timing->latency_seconds, 0);
  ASSERT_EQ(v.timing->trials.size(), 2u);
  for (const auto& trial : v.timing->trials) EXPECT_EQ(trial.size(), 3u);
  EXPECT_EQ(v.environment.at("gpu"), "cpu");
  EXPECT_EQ(v.environment.at("backend"), "cpu");
  EXPECT_TRUE(v.cost.is_object());

  // Ceilings are a GPU's: even when given, a cpu timing gets no floor.
  MachineCeilings ceilings;
  ceilings.gpu = "NVIDIA H200";
  ceilings.copy_bytes_per_second = ceilings.bf16_flops_per_second = 1e12;
  ceilings.fp8_flops_per_second = ceilings.fp32_flops_per_second = 1e12;
  EXPECT_FALSE(ceilings_for(v, ceilings).has_value());
  VerdictContext ctx{
      "candidate", kDecode, "", 1, evaluation_options_json(options(TimingMethod::kWall)), ceilings};
  std::optional<EnvironmentRecord> env;
  const EvaluationRecord record = evaluation_record(v, ctx, &env);
  EXPECT_EQ(record.timing_method, "wall");
  EXPECT_FALSE(record.floor_seconds.has_value());
  EXPECT_FALSE(record.fraction_of_floor.has_value());
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->environment.at("gpu"), "cpu");
  const Json timing = verdict_timing_json(v, ceilings);
  EXPECT_EQ(timing.at("method"), "wall");
  EXPECT_FALSE(timing.contains("floor_seconds"));
}

TEST_F(WallTiming, APairIsTimedInterleavedInTheRequestedOrder) {
  Evaluator e = evaluator(std::nullopt);
  e.set_peer("builtin:cpu_reference", kDecode);
  const std::vector<int> order = {0, 1, 1, 0, 0, 1, 0};
  const Evaluator::PairedTiming t =
      e.time_pair(def(), workload(), 0, TimingMethod::kWall, 1, order);
  ASSERT_TRUE(t.error.empty()) << t.error;
  EXPECT_EQ(t.a.size(), 4u);
  EXPECT_EQ(t.b.size(), 3u);
  for (const auto& s : t.a) EXPECT_GT(s.seconds, 0);
  for (const auto& s : t.b) EXPECT_GT(s.seconds, 0);
  EXPECT_EQ(t.environment.at("gpu"), "cpu");
  EXPECT_TRUE(t.cost.is_object());
}

TEST_F(WallTiming, AGpuMethodOnTheCpuBackendIsRefusedNamingBoth) {
  const std::string message =
      "--timing cupti needs the cuda backend; the cpu backend times with --timing wall";
  Evaluator e = evaluator(TimingMethod::kCupti);
  EXPECT_THAT(test::error_of([&] { e.evaluate(def(), workload()); }), HasSubstr(message));
  Evaluator pair = evaluator(std::nullopt);
  pair.set_peer("builtin:cpu_reference", kDecode);
  const Evaluator::PairedTiming t =
      pair.time_pair(def(), workload(), 0, TimingMethod::kCupti, 0, {0, 1});
  EXPECT_THAT(t.error, HasSubstr(message));
  EXPECT_TRUE(t.a.empty());
}

}  // namespace
}  // namespace kh
