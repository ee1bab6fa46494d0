// Regimes: log-spaced bands with the documented edges, constant and derived axes left out, a
// workload never seen still gets a label, latency shares add up, and the shipped sets are
// partitioned (every workload in exactly one regime).
#include <limits>
#include <numeric>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/spec/dataset.h"
#include "kh/spec/regimes.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Definition toy_definition() {
  Definition def;
  def.name = "toy";
  def.axes = {{"batch", false, 0, ""},          {"heads", true, 8, ""},
              {"pages", false, 0, ""},          {"slots", false, 0, ""},
              {"batch_plus_one", false, 0, ""}, {"page_groups", false, 0, ""}};
  return def;
}

// `slots` never varies, `batch_plus_one` is batch + 1 (a bijection with batch), `page_groups` is
// pages / 8 (a function of pages but not the other way round, so it stays).
Workload toy_workload(const std::string& uuid, std::int64_t batch, std::int64_t pages) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"batch", batch},
            {"pages", pages},
            {"slots", 100},
            {"batch_plus_one", batch + 1},
            {"page_groups", pages / 8}};
  return w;
}

std::vector<Workload> toy_workloads() {
  return {toy_workload("w0", 0, 1),  toy_workload("w1", 1, 3),   toy_workload("w2", 3, 2),
          toy_workload("w3", 4, 16), toy_workload("w4", 15, 20), toy_workload("w5", 16, 63),
          toy_workload("w6", 1, 8)};
}

TEST(Regimes, BandEdgesAreLogSpaced) {
  using Band = std::pair<std::int64_t, std::int64_t>;
  auto band = [](std::int64_t v) {
    const AxisBand b = band_of("x", v);
    return Band{b.lo, b.hi};
  };
  EXPECT_EQ(band(0), Band(0, 1));
  EXPECT_EQ(band(1), Band(1, 4));
  EXPECT_EQ(band(3), Band(1, 4));
  EXPECT_EQ(band(4), Band(4, 16));
  EXPECT_EQ(band(15), Band(4, 16));
  EXPECT_EQ(band(16), Band(16, 64));
  const AxisBand top = band_of("x", std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(top.lo, std::int64_t{1} << 62);
  EXPECT_EQ(top.hi, std::numeric_limits<std::int64_t>::max());
  try {
    band_of("batch", -1);
    FAIL() << "a negative value must be rejected";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("batch"));
    EXPECT_THAT(e.what(), HasSubstr("-1"));
  }
}

TEST(Regimes, ConstantAndDerivedAxesDoNotTakePart) {
  const RegimePartition p = partition_regimes(toy_definition(), toy_workloads());
  EXPECT_EQ(p.definition, "toy");
  EXPECT_THAT(p.axes, ElementsAre("batch", "pages", "page_groups"));
}

TEST(Regimes, RegimesAreBandCombinationsOrderedByLowerBounds) {
  const RegimePartition p = partition_regimes(toy_definition(), toy_workloads());
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> members;
  for (const Regime& r : p.regimes) {
    labels.push_back(r.label);
    members.push_back(r.workloads);
    ASSERT_EQ(r.bands.size(), 3u);
    EXPECT_EQ(r.bands[0].axis, "batch");
  }
  EXPECT_THAT(labels, ElementsAre("batch 0, pages 1-3, page_groups 0",
                                  "batch 1-3, pages 1-3, page_groups 0",
                                  "batch 1-3, pages 4-15, page_groups 1-3",
                                  "batch 4-15, pages 16-63, page_groups 1-3",
                                  "batch 16-63, pages 16-63, page_groups 4-15"));
  EXPECT_THAT(members, ElementsAre(ElementsAre("w0"), ElementsAre("w1", "w2"), ElementsAre("w6"),
                                   ElementsAre("w3", "w4"), ElementsAre("w5")));
}

TEST(Regimes, NoVaryingAxisGivesOneRegimeCalledAll) {
  const std::vector<Workload> ws = {toy_workload("a", 2, 5), toy_workload("b", 2, 5)};
  const RegimePartition p = partition_regimes(toy_definition(), ws);
  EXPECT_TRUE(p.axes.empty());
  ASSERT_EQ(p.regimes.size(), 1u);
  EXPECT_EQ(p.regimes[0].label, "all");
  EXPECT_THAT(p.regimes[0].workloads, ElementsAre("a", "b"));
  EXPECT_EQ(p.regime_of(toy_workload("c", 900, 900)), std::optional<std::size_t>(0));
  EXPECT_TRUE(partition_regimes(toy_definition(), {}).regimes.empty());
}

TEST(Regimes, RegimeOfAWorkloadOutsideThePartitionGivesItsLabel) {
  const RegimePartition p = partition_regimes(toy_definition(), toy_workloads());
  std::string label;
  EXPECT_EQ(p.regime_of(toy_workload("w4", 15, 20), &label), std::optional<std::size_t>(3));
  EXPECT_EQ(label, "batch 4-15, pages 16-63, page_groups 1-3");
  // A value never seen: not added, but labelled by the band its value gives.
  EXPECT_EQ(p.regime_of(toy_workload("new", 1000, 2), &label), std::nullopt);
  EXPECT_EQ(label, "batch 256-1023, pages 1-3, page_groups 0");
  EXPECT_EQ(p.regimes.size(), 5u);
  // A seen band combination reached with new values is that regime.
  EXPECT_EQ(p.regime_of(toy_workload("new", 60, 40)), std::optional<std::size_t>(4));
}

TEST(Regimes, LatencySharesSumToOneAndCountMeasured) {
  const RegimePartition p = partition_regimes(toy_definition(), toy_workloads());
  // w2 and w5 not measured; an unknown uuid is ignored.
  const std::map<std::string, double> latency = {{"w0", 1.0}, {"w1", 2.0}, {"w3", 3.0},
                                                 {"w4", 1.0}, {"w6", 3.0}, {"zz", 50.0}};
  const std::vector<RegimeShare> shares = latency_shares(p, latency);
  ASSERT_EQ(shares.size(), 5u);
  const std::vector<int> workloads = {1, 2, 1, 2, 1}, measured = {1, 1, 1, 2, 0};
  const std::vector<double> sums = {1, 2, 3, 4, 0};
  double total_share = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    EXPECT_EQ(shares[i].regime, i);
    EXPECT_EQ(shares[i].workloads, workloads[i]) << i;
    EXPECT_EQ(shares[i].measured, measured[i]) << i;
    EXPECT_DOUBLE_EQ(shares[i].latency_sum, sums[i]) << i;
    EXPECT_DOUBLE_EQ(shares[i].share, sums[i] / 10.0) << i;
    total_share += shares[i].share;
  }
  EXPECT_DOUBLE_EQ(total_share, 1.0);
  for (const RegimeShare& s : latency_shares(p, {})) EXPECT_EQ(s.share, 0.0);
}

class ShippedRegimes : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedRegimes, EveryWorkloadIsInExactlyOneRegime) {
  static const Dataset ds = Dataset::open(test::source_dir());
  const std::string name = GetParam();
  const std::vector<Workload> ws = ds.workloads(name);
  ASSERT_FALSE(ws.empty());
  const RegimePartition p = partition_regimes(ds.definition(name), ws);
  std::map<std::string, int> seen;
  std::size_t count = 0;
  for (std::size_t i = 0; i < p.regimes.size(); ++i) {
    const Regime& r = p.regimes[i];
    EXPECT_FALSE(r.workloads.empty()) << r.label;
    EXPECT_EQ(r.bands.size(), p.axes.size());
    count += r.workloads.size();
    for (const std::string& uuid : r.workloads) ++seen[uuid];
    if (i > 0) {
      std::vector<std::int64_t> prev, cur;
      for (const AxisBand& b : p.regimes[i - 1].bands) prev.push_back(b.lo);
      for (const AxisBand& b : r.bands) cur.push_back(b.lo);
      EXPECT_LT(prev, cur) << "regimes ordered by the bands' lower bounds";
    }
  }
  EXPECT_EQ(count, ws.size());
  for (const Workload& w : ws) {
    EXPECT_EQ(seen[w.uuid], 1) << w.uuid;
    const std::optional<std::size_t> r = p.regime_of(w);
    ASSERT_TRUE(r.has_value()) << w.uuid;
    EXPECT_THAT(p.regimes[*r].workloads, ::testing::Contains(w.uuid));
  }
  if (name.starts_with("gdn_prefill")) {
    EXPECT_THAT(p.axes, ElementsAre("total_seq_len", "num_seqs"));
  }
  if (name.starts_with("dsa_topk_indexer")) {
    EXPECT_THAT(p.axes, ElementsAre("batch_size", "max_num_pages"));
  }
  if (name.starts_with("gdn_decode")) {
    EXPECT_THAT(p.axes, ElementsAre("batch_size"));
    EXPECT_EQ(p.regimes.front().label, "batch_size 1-3");
  }
}

INSTANTIATE_TEST_SUITE_P(Sets, ShippedRegimes,
                         ::testing::Values("gdn_prefill_qk4_v8_d128_k_last",
                                           "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64",
                                           "gdn_decode_qk4_v8_d128_k_last"));

}  // namespace
}  // namespace kh
