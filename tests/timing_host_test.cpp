// The host side of the timers: the official CUPTI span rule on recorded activity fixtures, the
// activity-signature check, the official timing counts, median/mean summaries, throttle flags
// and the JSON record of every sample.
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/gpu/activity.h"
#include "kh/gpu/sample_stats.h"
#include "kh/gpu/timing_config.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
using Kind = GpuActivity::Kind;

// CUPTI timestamps are nanoseconds of a wall clock, far beyond a double's exact integers: the
// fixtures use such values so that a span computed through doubles would be caught.
constexpr std::uint64_t kBase = 1'700'000'000'000'000'000ULL;

ApiRecord api(std::uint32_t id, std::uint64_t start) {
  return ApiRecord{id, kBase + start, kBase + start + 2'000};
}

GpuActivity kernel(std::uint32_t id, std::uint64_t start, std::uint64_t end,
                   const std::string& name, std::uint32_t stream = 7) {
  GpuActivity a;
  a.kind = Kind::kKernel;
  a.correlation_id = id;
  a.stream_id = stream;
  a.start_ns = kBase + start;
  a.end_ns = kBase + end;
  a.name = name;
  return a;
}

GpuActivity memset_activity(std::uint32_t id, std::uint64_t start, std::uint64_t end,
                            std::uint64_t bytes, std::uint32_t value) {
  GpuActivity a = kernel(id, start, end, "");
  a.kind = Kind::kMemset;
  a.bytes = bytes;
  a.value = value;
  return a;
}

GpuActivity memcpy_activity(std::uint32_t id, std::uint64_t start, std::uint64_t end,
                            std::uint32_t copy_kind, std::uint64_t bytes) {
  GpuActivity a = kernel(id, start, end, "");
  a.kind = Kind::kMemcpy;
  a.copy_kind = copy_kind;
  a.bytes = bytes;
  return a;
}

HostWindow window(std::uint64_t t0, std::uint64_t t1) {
  return HostWindow{kBase + t0, kBase + t1};
}

// ---- span of one call ----------------------------------------------------------------------

TEST(TimingSpan, SingleKernelSpanIsItsGpuDuration) {
  const std::vector<ApiRecord> calls{api(1, 100)};
  const std::vector<GpuActivity> work{kernel(1, 5'000, 17'000, "gemm")};
  const IterationSpanResult r = iteration_span(calls, work, window(0, 3'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.span.start_ns, kBase + 5'000);
  EXPECT_EQ(r.span.end_ns, kBase + 17'000);
  EXPECT_EQ(r.span.activity_count, 1u);
  EXPECT_DOUBLE_EQ(r.span.seconds(), 12'000 / 1e9);  // launch latency before 5000 not counted
}

TEST(TimingSpan, IdleGapsBetweenKernelsAreIncluded) {
  const std::vector<ApiRecord> calls{api(1, 100), api(2, 2'500)};
  const std::vector<GpuActivity> work{kernel(1, 5'000, 6'000, "a"), kernel(2, 9'000, 10'000, "b")};
  const IterationSpanResult r = iteration_span(calls, work, window(0, 3'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.span.seconds(), 5'000 / 1e9);  // not the 2000 ns of kernel time
  EXPECT_EQ(r.span.activity_count, 2u);
}

TEST(TimingSpan, WorkOnEveryStreamCounts) {
  const std::vector<ApiRecord> calls{api(1, 100), api(2, 200), api(3, 300)};
  const std::vector<GpuActivity> work{kernel(1, 4'000, 9'000, "main", 7),
                                      kernel(2, 3'000, 5'000, "side", 13),
                                      kernel(3, 6'000, 12'000, "tail", 21)};
  const IterationSpanResult r = iteration_span(calls, work, window(0, 1'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.span.start_ns, kBase + 3'000);  // from the side stream
  EXPECT_EQ(r.span.end_ns, kBase + 12'000);   // to the third stream
  EXPECT_EQ(r.span.signature.size(), 3u);
}

TEST(TimingSpan, MemsetsAndMemcpysCountAndEnterTheSignature) {
  const std::vector<ApiRecord> calls{api(1, 100), api(2, 200), api(3, 300)};
  const std::vector<GpuActivity> work{memcpy_activity(1, 2'000, 3'000, 1, 4096),
                                      memset_activity(2, 3'500, 4'000, 1024, 0),
                                      kernel(3, 4'500, 8'000, "k")};
  const IterationSpanResult r = iteration_span(calls, work, window(0, 1'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.span.seconds(), 6'000 / 1e9);
  std::vector<std::string> described;
  for (const auto& [key, count] : r.span.signature) described.push_back(describe(key));
  EXPECT_THAT(described, ::testing::UnorderedElementsAre("MEMCPY copy kind 1, 4096 bytes",
                                                         "MEMSET 1024 bytes, value 0", "kernel k"));
}

TEST(TimingSpan, ApiCallStartedBeforeTheWindowIsExcludedWithItsActivity) {
  // Call 1 starts 1 ns before t0 (it ends inside the window): its kernel is not this call's.
  // Calls 2 and 3 start exactly at t0 and t1: both ends of the window are inside.
  const std::vector<ApiRecord> calls{api(1, 999), api(2, 1'000), api(3, 4'000)};
  const std::vector<GpuActivity> work{kernel(1, 1'500, 20'000, "early"),
                                      kernel(2, 5'000, 6'000, "at_t0"),
                                      kernel(3, 7'000, 9'000, "at_t1")};
  const IterationSpanResult r = iteration_span(calls, work, window(1'000, 4'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.span.activity_count, 2u);
  EXPECT_EQ(r.span.start_ns, kBase + 5'000);
  EXPECT_EQ(r.span.end_ns, kBase + 9'000);  // not the early kernel's 20000
  EXPECT_FALSE(r.span.signature.contains(ActivityKey{Kind::kKernel, "early", 0, 0, 0}));
}

TEST(TimingSpan, L2FlushLaunchedBeforeTheCallIsExcluded) {
  // The official loop zeroes the flush buffer, synchronises, then takes t0: the flush's launch
  // precedes the window even when its recorded end is late.
  const std::vector<ApiRecord> calls{api(1, 0), api(2, 60'000)};
  const std::vector<GpuActivity> work{memset_activity(1, 500, 59'000, 100 << 20, 0),
                                      kernel(2, 62'000, 63'000, "candidate")};
  const IterationSpanResult r = iteration_span(calls, work, window(59'500, 61'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.span.seconds(), 1'000 / 1e9);
  EXPECT_EQ(r.span.signature.size(), 1u);
}

TEST(TimingSpan, ActivitySharedByRuntimeAndDriverRecordsCountsOnce) {
  const std::vector<ApiRecord> calls{api(5, 100), api(5, 150)};
  const std::vector<GpuActivity> work{kernel(5, 1'000, 2'000, "k")};
  const IterationSpanResult r = iteration_span(calls, work, window(0, 1'000));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.span.activity_count, 1u);
  EXPECT_EQ(r.span.signature.begin()->second, 1);
}

TEST(TimingSpan, NoActivityIsAnError) {
  const std::vector<ApiRecord> calls{api(1, 100), api(2, 5'000)};
  const std::vector<GpuActivity> work{kernel(2, 6'000, 7'000, "outside")};
  const IterationSpanResult r = iteration_span(calls, work, window(0, 1'000));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, kNoActivityMessage);
  EXPECT_FALSE(iteration_span({}, work, window(0, 1'000)).ok());  // no API call at all
}

TEST(TimingSpan, KeyKeepsOnlyTheFieldsOfItsKind) {
  GpuActivity k = kernel(1, 0, 1, "k");
  k.bytes = 99;  // meaningless on a kernel
  EXPECT_EQ(activity_key(k), (ActivityKey{Kind::kKernel, "k", 0, 0, 0}));
  GpuActivity c = memcpy_activity(1, 0, 1, 2, 64);
  c.value = 7;
  c.name = "ignored";
  EXPECT_EQ(activity_key(c), (ActivityKey{Kind::kMemcpy, "MEMCPY", 2, 64, 0}));
  GpuActivity s = memset_activity(1, 0, 1, 64, 3);
  s.copy_kind = 4;
  EXPECT_EQ(activity_key(s), (ActivityKey{Kind::kMemset, "MEMSET", 0, 64, 3}));
}

// ---- a trial's timed calls -----------------------------------------------------------------

// Iteration i occupies [i * 100000, i * 100000 + 50000): its calls start at +100 and +200.
struct Trial {
  std::vector<ApiRecord> calls;
  std::vector<GpuActivity> work;
  std::vector<HostWindow> windows;
  std::uint32_t next_id = 1;

  void add_call(std::size_t iteration, std::uint64_t offset, GpuActivity a) {
    const std::uint64_t base = iteration * 100'000;
    calls.push_back(api(next_id, base + offset));
    a.correlation_id = next_id++;
    a.start_ns += base;
    a.end_ns += base;
    work.push_back(std::move(a));
  }
  void add_window(std::size_t iteration) {
    const std::uint64_t base = iteration * 100'000;
    windows.push_back(window(base, base + 1'000));
  }
};

Trial consistent_trial(int iterations) {
  Trial t;
  for (int i = 0; i < iterations; ++i) {
    t.add_call(i, 100, kernel(0, 2'000, 2'000 + 1'000 * (i + 1), "k1"));
    t.add_call(i, 200, memset_activity(0, 9'000, 9'500 + 100 * i, 256, 0));
    t.add_window(i);
  }
  return t;
}

TEST(TimingTrial, ConsistentIterationsGiveOneSpanEach) {
  const Trial t = consistent_trial(3);
  const TimedSpansResult r = timed_iteration_spans(t.calls, t.work, t.windows);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(r.seconds[0], 7'500 / 1e9);
  EXPECT_DOUBLE_EQ(r.seconds[2], 7'700 / 1e9);
  EXPECT_EQ(r.signature.size(), 2u);
}

TEST(TimingTrial, DifferentKernelInAnIterationIsNamed) {
  Trial t = consistent_trial(2);
  t.add_call(2, 100, kernel(0, 2'000, 3'000, "k2"));
  t.add_call(2, 200, memset_activity(0, 9'000, 9'500, 256, 0));
  t.add_window(2);
  const TimedSpansResult r = timed_iteration_spans(t.calls, t.work, t.windows);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.error, HasSubstr(kInconsistentMessage));
  EXPECT_THAT(r.error, HasSubstr("timed iteration 2"));
  EXPECT_THAT(r.error, HasSubstr("missing kernel k1"));
  EXPECT_THAT(r.error, HasSubstr("extra kernel k2"));
  EXPECT_TRUE(r.seconds.empty());
}

TEST(TimingTrial, ChangedMemsetSizeIsInconsistent) {
  Trial t = consistent_trial(1);
  t.add_call(1, 100, kernel(0, 2'000, 3'000, "k1"));
  t.add_call(1, 200, memset_activity(0, 9'000, 9'500, 512, 0));
  t.add_window(1);
  const TimedSpansResult r = timed_iteration_spans(t.calls, t.work, t.windows);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.error, HasSubstr("timed iteration 1"));
  EXPECT_THAT(r.error, HasSubstr("extra MEMSET 512 bytes, value 0"));
}

TEST(TimingTrial, OfficialSetRuleIgnoresLaunchCountsExactCountsDoesNot) {
  Trial t = consistent_trial(1);
  t.add_call(1, 100, kernel(0, 2'000, 3'000, "k1"));
  t.add_call(1, 150, kernel(0, 3'000, 4'000, "k1"));  // k1 twice
  t.add_call(1, 200, memset_activity(0, 9'000, 9'500, 256, 0));
  t.add_window(1);
  EXPECT_TRUE(timed_iteration_spans(t.calls, t.work, t.windows, SignatureRule::kOfficialSet).ok());
  const TimedSpansResult strict =
      timed_iteration_spans(t.calls, t.work, t.windows, SignatureRule::kExactCounts);
  EXPECT_FALSE(strict.ok());
  EXPECT_THAT(strict.error, HasSubstr("kernel k1 2 times instead of 1"));
}

TEST(TimingTrial, FirstErrorInIterationOrderIsReported) {
  Trial t = consistent_trial(1);
  t.add_call(1, 100, kernel(0, 2'000, 3'000, "other"));  // iteration 1: inconsistent
  t.add_window(1);
  t.add_window(2);  // iteration 2: nothing at all
  const TimedSpansResult r = timed_iteration_spans(t.calls, t.work, t.windows);
  EXPECT_THAT(r.error, HasSubstr("timed iteration 1 differs"));

  Trial u = consistent_trial(1);
  u.add_window(1);  // iteration 1: nothing
  const TimedSpansResult empty = timed_iteration_spans(u.calls, u.work, u.windows);
  EXPECT_EQ(empty.error, std::string(kNoActivityMessage) + " (timed iteration 1)");
}

TEST(TimingTrial, CheckSignaturesNamesTheFirstDifferingIteration) {
  const ActivityKey a{Kind::kKernel, "a", 0, 0, 0};
  const ActivityKey b{Kind::kKernel, "b", 0, 0, 0};
  const std::vector<ActivitySignature> same{{{a, 1}}, {{a, 1}}};
  EXPECT_FALSE(check_signatures(same, SignatureRule::kOfficialSet).has_value());
  const std::vector<ActivitySignature> sigs{{{a, 1}}, {{a, 1}}, {{a, 1}, {b, 1}}, {{b, 1}}};
  const auto error = check_signatures(sigs, SignatureRule::kOfficialSet);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error,
            "Inconsistent kernel names: timed iteration 2 differs from iteration 0: "
            "extra kernel b");
}

// ---- counts and methods --------------------------------------------------------------------

TEST(TimingConfigTable, OfficialCountsPerDefinition) {
  EXPECT_EQ(official_timing_config("gdn_prefill_qk4_v8_d128_k_last"), (TimingConfig{1, 5, 3}));
  EXPECT_EQ(official_timing_config("gdn_decode_qk4_v8_d128_k_last"), (TimingConfig{10, 50, 3}));
  EXPECT_EQ(official_timing_config("moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"),
            kDefaultTimingConfig);
  EXPECT_EQ(kDefaultTimingConfig, (TimingConfig{10, 50, 3}));
  EXPECT_NO_THROW(check_timing_config(TimingConfig{0, 1, 1}));
  EXPECT_THROW(check_timing_config(TimingConfig{10, 0, 3}), Error);
  EXPECT_THROW(check_timing_config(TimingConfig{-1, 5, 3}), Error);
}

TEST(TimingConfigTable, MethodNamesRoundTripAndBadNamesAreExplained) {
  for (const TimingMethod m :
       {TimingMethod::kCupti, TimingMethod::kEvents, TimingMethod::kGraph, TimingMethod::kWall})
    EXPECT_EQ(parse_timing_method(timing_method_name(m)), m);
  EXPECT_EQ(timing_method_name(TimingMethod::kEvents), "events");
  EXPECT_EQ(parse_timing_method("wall"), TimingMethod::kWall);
  EXPECT_FALSE(timing_method_from_name("CUPTI").has_value());
  try {
    parse_timing_method("nsys");
    FAIL() << "expected kh::Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("\"nsys\""));
    EXPECT_THAT(e.what(), HasSubstr("cupti, events, graph, wall"));
  }
}

TEST(TimingConfigTable, EachMethodTimesOnItsOwnBackend) {
  for (const TimingMethod m : {TimingMethod::kCupti, TimingMethod::kEvents, TimingMethod::kGraph})
    EXPECT_EQ(timing_method_backend(m), "cuda");
  EXPECT_EQ(timing_method_backend(TimingMethod::kWall), "cpu");
  EXPECT_NO_THROW(check_timing_backend(TimingMethod::kWall, "cpu"));
  EXPECT_NO_THROW(check_timing_backend(TimingMethod::kGraph, "cuda"));
  EXPECT_EQ(test::error_of([] { check_timing_backend(TimingMethod::kCupti, "cpu"); }),
            "--timing cupti needs the cuda backend; the cpu backend times with --timing wall");
  EXPECT_EQ(test::error_of([] { check_timing_backend(TimingMethod::kWall, "cuda"); }),
            "--timing wall needs the cpu backend; the cuda backend times with --timing cupti, "
            "events or graph");
}

}  // namespace
}  // namespace kh
