// Gate results and samples survive their JSON form (what the store keeps), and the readers name
// a bad field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/gate/gate_json.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

std::vector<WorkloadSamples> samples() {
  std::vector<WorkloadSamples> s(3);
  for (int w = 0; w < 3; ++w) {
    s[w].workload = "w" + std::to_string(w);
    for (int r = 0; r < 2; ++r)
      s[w].rounds.push_back({{1e-3 + w * 1e-4, 1.1e-3}, {0.9e-3 + r * 1e-5, 1.0e-3}});
  }
  s[2].b_correct = false;
  s[2].rounds.clear();
  return s;
}

TEST(GateJson, SamplesRoundTrip) {
  const auto in = samples();
  const auto out = paired_samples_from_json(paired_samples_json(in));
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t w = 0; w < in.size(); ++w) {
    EXPECT_EQ(out[w].workload, in[w].workload);
    EXPECT_EQ(out[w].a_correct, in[w].a_correct);
    EXPECT_EQ(out[w].b_correct, in[w].b_correct);
    ASSERT_EQ(out[w].rounds.size(), in[w].rounds.size());
    for (std::size_t r = 0; r < in[w].rounds.size(); ++r) {
      EXPECT_EQ(out[w].rounds[r].a, in[w].rounds[r].a);
      EXPECT_EQ(out[w].rounds[r].b, in[w].rounds[r].b);
    }
  }
}

TEST(GateJson, JudgedResultRoundTripsAndReDerivesFromItsSamples) {
  auto s = samples();
  s.pop_back();  // judge_paired needs rounds on every workload
  GateStatistics stats;
  stats.resamples = 200;
  const PairedGateResult r =
      judge_paired(s, {{"first", {"w0"}}, {"both", {"w0", "w1"}}}, GateObjective::kMeanSpeedup, stats);
  const PairedGateResult back = paired_gate_from_json(paired_gate_json(r));
  EXPECT_EQ(back.objective, GateObjective::kMeanSpeedup);
  ASSERT_EQ(back.workloads.size(), 2u);
  EXPECT_EQ(back.workloads[1].workload, "w1");
  EXPECT_DOUBLE_EQ(back.workloads[1].speedup.lo, r.workloads[1].speedup.lo);
  EXPECT_EQ(back.workloads[1].verdict, r.workloads[1].verdict);
  ASSERT_EQ(back.groups.size(), 2u);
  EXPECT_EQ(back.groups[1].workloads, (std::vector<std::size_t>{0, 1}));
  EXPECT_DOUBLE_EQ(back.overall.objective.estimate, r.overall.objective.estimate);
  EXPECT_EQ(back.overall.verdict, r.overall.verdict);
  // The stored samples give the same statistics again (same seed).
  const PairedGateResult again = judge_paired(paired_samples_from_json(paired_samples_json(s)),
                                              {{"first", {"w0"}}, {"both", {"w0", "w1"}}},
                                              GateObjective::kMeanSpeedup, stats);
  EXPECT_DOUBLE_EQ(again.overall.objective.hi, r.overall.objective.hi);
}

TEST(GateJson, ReadersNameTheBadField) {
  Json j = paired_samples_json(samples());
  j[0]["rounds"][0]["a"][1] = "fast";
  EXPECT_THAT(test::error_of([&] { paired_samples_from_json(j); }), HasSubstr("rounds"));
  PairedGateResult r;
  Json g = paired_gate_json(r);
  g["overall"]["verdict"] = "maybe";
  EXPECT_THAT(test::error_of([&] { paired_gate_from_json(g); }),
              HasSubstr("expected \"win\", \"tie\" or \"loss\""));
  EXPECT_THAT(test::error_of([] { parse_objective("median"); }), HasSubstr("mean_speedup"));
}

}  // namespace
}  // namespace kh
