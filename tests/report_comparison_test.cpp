// Candidate comparisons: only workloads PASSED and timed on both sides give a speedup, geometric
// means overall and per regime match hand computations, a regime with nothing compared says so,
// and a candidate's distribution summary counts and averages what it should.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/report/comparison.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

Definition one_axis_definition() {
  Definition def;
  def.name = "toy";
  def.axes = {{"batch", false, 0, ""}};
  return def;
}

Workload workload(const std::string& uuid, std::int64_t batch) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"batch", batch}};
  return w;
}

WorkloadResult timed(const std::string& uuid, double us) {
  return {uuid, "PASSED", us * 1e-6, std::nullopt, false};
}

// Regimes of the partition (made from w0..w5): batch 1-3 {w0,w1,w5}, 4-15 {w2,w3}, 16-63 {w4}.
// w6 (batch 100) is compared but lies outside the partition.
struct Fixture {
  std::vector<Workload> workloads = {workload("w0", 1),  workload("w1", 2),  workload("w2", 5),
                                     workload("w3", 6),  workload("w4", 20), workload("w5", 3),
                                     workload("w6", 100)};
  RegimePartition partition = partition_regimes(
      one_axis_definition(), std::vector<Workload>(workloads.begin(), workloads.end() - 1));
  CandidateResults a{"base", "aaaa", {}}, b{"fast", "bbbb", {}};

  Fixture() {
    a.workloads = {
        timed("w0", 4), timed("w1", 9),
        timed("w2", 2), {"w3", "INCORRECT_NUMERICAL", std::nullopt, std::nullopt, false},
        timed("w4", 8), {"w5", "PASSED", std::nullopt, std::nullopt, false},  // passed, not timed
        timed("w6", 8)};
    a.workloads[0].fraction_of_floor = 0.5;
    a.workloads[1].fraction_of_floor = 0.1;
    a.workloads[5].fraction_of_floor = 0.9;  // not timed: left out of the median
    a.workloads[2].flaky = true;
    // speedups a/b: w0 4, w1 0.25, w2 2, w6 8; w3 passed by B only; B has no result for w4.
    b.workloads = {timed("w0", 1), timed("w1", 36), timed("w2", 1),
                   timed("w3", 1), timed("w5", 1),  timed("w6", 1)};
  }
};

TEST(Comparison, SpeedupsOnlyWhereBothPassedAndTimed) {
  const Fixture f;
  const Comparison c = compare_candidates(f.partition, f.workloads, f.a, f.b);
  EXPECT_EQ(c.a, "base");
  EXPECT_EQ(c.b, "fast");
  ASSERT_EQ(c.workloads.size(), 7u);
  const std::vector<std::optional<double>> expected = {
      4.0, 0.25, 2.0, std::nullopt, std::nullopt, std::nullopt, 8.0};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(c.workloads[i].workload);
    EXPECT_EQ(c.workloads[i].workload, f.workloads[i].uuid);
    ASSERT_EQ(c.workloads[i].speedup.has_value(), expected[i].has_value());
    if (expected[i]) {
      EXPECT_DOUBLE_EQ(*c.workloads[i].speedup, *expected[i]);
    }
  }
  EXPECT_FALSE(c.workloads[3].a.has_value());  // INCORRECT_NUMERICAL has no latency to compare
  EXPECT_DOUBLE_EQ(*c.workloads[3].b, 1e-6);
  EXPECT_FALSE(c.workloads[5].a.has_value());  // passed but untimed
  EXPECT_EQ(c.compared, 4);
  // (4 * 0.25 * 2 * 8)^(1/4) = 16^(1/4) = 2
  EXPECT_DOUBLE_EQ(*c.geomean_speedup, 2.0);
  EXPECT_DOUBLE_EQ(*c.min_speedup, 0.25);
  EXPECT_DOUBLE_EQ(*c.max_speedup, 8.0);
  EXPECT_EQ(c.a_only_passed, 1);  // w4
  EXPECT_EQ(c.b_only_passed, 1);  // w3
}

TEST(Comparison, RegimeBreakdown) {
  const Fixture f;
  ASSERT_EQ(f.partition.regimes.size(), 3u);
  const Comparison c = compare_candidates(f.partition, f.workloads, f.a, f.b);
  ASSERT_EQ(c.regimes.size(), 3u);
  // batch 1-3: w0 (4) and w1 (0.25) -> 1; w5 untimed on A.
  EXPECT_EQ(c.regimes[0].regime, 0u);
  EXPECT_EQ(c.regimes[0].compared, 2);
  EXPECT_DOUBLE_EQ(*c.regimes[0].geomean_speedup, 1.0);
  EXPECT_DOUBLE_EQ(*c.regimes[0].min_speedup, 0.25);
  EXPECT_DOUBLE_EQ(*c.regimes[0].max_speedup, 4.0);
  // batch 4-15: w2 (2); w3 failed on A.
  EXPECT_EQ(c.regimes[1].compared, 1);
  EXPECT_DOUBLE_EQ(*c.regimes[1].geomean_speedup, 2.0);
  // batch 16-63: w4 has no B result: reported, nothing compared.
  EXPECT_EQ(c.regimes[2].regime, 2u);
  EXPECT_EQ(c.regimes[2].compared, 0);
  EXPECT_FALSE(c.regimes[2].geomean_speedup.has_value());
  EXPECT_FALSE(c.regimes[2].min_speedup.has_value());
  // w6 is outside the partition: counted overall only.
  EXPECT_EQ(c.workloads[6].regime, std::nullopt);
  EXPECT_EQ(c.workloads[0].regime, std::optional<std::size_t>(0));
}

TEST(Comparison, Json) {
  const Fixture f;
  const Json j =
      comparison_json(compare_candidates(f.partition, f.workloads, f.a, f.b), f.partition);
  EXPECT_EQ(j.at("a"), "base");
  EXPECT_EQ(j.at("compared"), 4);
  EXPECT_DOUBLE_EQ(j.at("geomean_speedup").get<double>(), 2.0);
  EXPECT_EQ(j.at("a_only_passed"), 1);
  ASSERT_EQ(j.at("regimes").size(), 3u);
  EXPECT_EQ(j.at("regimes")[0].at("label"), "batch 1-3");
  EXPECT_EQ(j.at("regimes")[0].at("workloads"), 3);
  EXPECT_TRUE(j.at("regimes")[2].at("geomean_speedup").is_null());
  EXPECT_EQ(j.at("regimes")[2].at("compared"), 0);
  ASSERT_EQ(j.at("workloads").size(), 7u);
  EXPECT_TRUE(j.at("workloads")[6].at("regime").is_null());
  EXPECT_TRUE(j.at("workloads")[3].at("speedup").is_null());
  EXPECT_DOUBLE_EQ(j.at("workloads")[1].at("speedup").get<double>(), 0.25);
}

TEST(Comparison, NothingComparedGivesNoGeomean) {
  const Fixture f;
  const CandidateResults empty{"none", "", {}};
  const Comparison c = compare_candidates(f.partition, f.workloads, f.a, empty);
  EXPECT_EQ(c.compared, 0);
  EXPECT_FALSE(c.geomean_speedup.has_value());
  EXPECT_EQ(c.a_only_passed, 6);
  EXPECT_EQ(c.b_only_passed, 0);
  for (const RegimeComparison& r : c.regimes) EXPECT_EQ(r.compared, 0);
}

TEST(Comparison, ZeroLatencyIsAnError) {
  Fixture f;
  f.b.workloads[0].latency = 0.0;
  try {
    compare_candidates(f.partition, f.workloads, f.a, f.b);
    FAIL() << "a zero latency must be rejected";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("w0"));
    EXPECT_THAT(e.what(), HasSubstr("fast"));
  }
}

TEST(Distribution, Summary) {
  const Fixture f;
  const DistributionSummary s = summarize_distribution(f.a);
  EXPECT_EQ(s.workloads, 7);
  EXPECT_EQ(s.passed, 6);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.timed, 5);  // w5 passed untimed
  EXPECT_EQ(s.flaky, 1);
  EXPECT_DOUBLE_EQ(s.latency_sum, 31e-6);  // 4 + 9 + 2 + 8 + 8 us
  EXPECT_NEAR(*s.geomean_latency, std::pow(4.0 * 9 * 2 * 8 * 8, 0.2) * 1e-6, 1e-18);
  EXPECT_DOUBLE_EQ(*s.median_latency, 8e-6);
  EXPECT_DOUBLE_EQ(*s.median_fraction_of_floor, 0.3);  // median of 0.5 and 0.1

  const DistributionSummary none = summarize_distribution({"x", "", {}});
  EXPECT_EQ(none.workloads, 0);
  EXPECT_FALSE(none.geomean_latency.has_value());
  EXPECT_FALSE(none.median_fraction_of_floor.has_value());
}

TEST(Distribution, FindAndStatistics) {
  const Fixture f;
  ASSERT_NE(f.a.find("w3"), nullptr);
  EXPECT_EQ(f.a.find("w3")->status, "INCORRECT_NUMERICAL");
  EXPECT_EQ(f.b.find("w4"), nullptr);
  EXPECT_DOUBLE_EQ(*median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(*median({4, 1, 3, 2}), 2.5);
  EXPECT_FALSE(median({}).has_value());
  EXPECT_DOUBLE_EQ(*geometric_mean({1, 4, 16}), 4.0);
  EXPECT_THROW(geometric_mean({1, -2}), Error);
}

}  // namespace
}  // namespace kh
