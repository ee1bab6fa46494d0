// Representative selection: an outlier workload gets a group of its own, too few regimes are split
// to the minimum, every group gets a representative near its median (plus its heaviest workload
// when that one weighs), groups come by latency share, and the shipped GDN prefill set is covered
// by a small set.
#include <algorithm>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/gate/representative_set.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

Definition toy_definition() {
  Definition def;
  def.name = "toy";
  def.axes = {{"batch", false, 0, ""}, {"heads", true, 8, ""}};
  return def;
}

Workload toy_workload(const std::string& uuid, std::int64_t batch) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"batch", batch}};
  return w;
}

/// Three regimes (batch 1-3, 4-15, 16-63), latency growing with batch.
std::vector<Workload> three_regimes() {
  return {toy_workload("a1", 1),  toy_workload("a2", 2),  toy_workload("a3", 3),
          toy_workload("b1", 4),  toy_workload("b2", 5),  toy_workload("b3", 6),
          toy_workload("c1", 16), toy_workload("c2", 20), toy_workload("c3", 24)};
}

std::map<std::string, double> latency_by_batch(const std::vector<Workload>& ws) {
  std::map<std::string, double> lat;
  for (const Workload& w : ws) lat[w.uuid] = 1e-6 * static_cast<double>(w.axis("batch"));
  return lat;
}

RepresentativeSet select(const std::vector<Workload>& ws,
                         const std::map<std::string, double>& lat) {
  return select_representatives(partition_regimes(toy_definition(), ws), ws, lat);
}

/// Every workload in exactly one group, every group with a representative from its own members,
/// groups ordered by share, and the flat list the groups' representatives without repeats.
void expect_well_formed(const RepresentativeSet& set, const std::vector<Workload>& ws) {
  std::map<std::string, int> seen;
  double share = 0;
  std::vector<std::string> flat;
  for (std::size_t i = 0; i < set.groups.size(); ++i) {
    const RepresentativeGroup& g = set.groups[i];
    EXPECT_FALSE(g.group.workloads.empty()) << g.group.name;
    EXPECT_FALSE(g.representatives.empty()) << g.group.name;
    for (const std::string& u : g.group.workloads) ++seen[u];
    for (const std::string& r : g.representatives) {
      EXPECT_THAT(g.group.workloads, ::testing::Contains(r)) << g.group.name;
      if (std::find(flat.begin(), flat.end(), r) == flat.end()) flat.push_back(r);
    }
    if (i > 0) {
      EXPECT_GE(set.groups[i - 1].latency_share, g.latency_share) << g.group.name;
    }
    share += g.latency_share;
  }
  for (const Workload& w : ws) EXPECT_EQ(seen[w.uuid], 1) << w.uuid;
  if (share > 0) {  // 0 when nothing was measured
    EXPECT_NEAR(share, 1.0, 1e-12);
  }
  EXPECT_EQ(set.workloads, flat);
}

TEST(RepresentativeSet, RegimesBecomeGroupsSortedByLatencyShare) {
  const std::vector<Workload> ws = three_regimes();
  const RepresentativeSet set = select(ws, latency_by_batch(ws));
  expect_well_formed(set, ws);
  ASSERT_EQ(set.groups.size(), 3u);
  EXPECT_EQ(set.groups[0].group.name, "batch 16-63");
  EXPECT_EQ(set.groups[1].group.name, "batch 4-15");
  EXPECT_EQ(set.groups[2].group.name, "batch 1-3");
  EXPECT_THAT(set.groups[0].group.workloads, ElementsAre("c1", "c2", "c3"));
  EXPECT_NEAR(set.groups[0].latency_share, 60.0 / 81.0, 1e-12);
  // The median member of each; c3 (24 of 81) also weighs at least 10 % on its own, b3 (6) not.
  EXPECT_THAT(set.groups[0].representatives, ElementsAre("c2", "c3"));
  EXPECT_THAT(set.groups[1].representatives, ElementsAre("b2"));
  EXPECT_THAT(set.groups[2].representatives, ElementsAre("a2"));
  EXPECT_THAT(set.workloads, ElementsAre("c2", "c3", "b2", "a2"));
}

TEST(RepresentativeSet, OutlierWorkloadBecomesItsOwnGroup) {
  const std::vector<Workload> ws = three_regimes();
  std::map<std::string, double> lat = latency_by_batch(ws);
  lat["b2"] = 200e-6;  // of 276e-6 in total: well over a third
  const RepresentativeSet set = select(ws, lat);
  expect_well_formed(set, ws);
  ASSERT_EQ(set.groups.size(), 4u);
  const RepresentativeGroup& outlier = set.groups.front();
  EXPECT_THAT(outlier.group.workloads, ElementsAre("b2"));
  EXPECT_THAT(outlier.group.name, HasSubstr("outlier b2"));
  EXPECT_THAT(outlier.representatives, ElementsAre("b2"));
  EXPECT_NEAR(outlier.latency_share, 200.0 / 276.0, 1e-12);
  for (const RepresentativeGroup& g : set.groups)
    if (g.group.name == "batch 4-15") {
      EXPECT_THAT(g.group.workloads, ElementsAre("b1", "b3"));
    }

  // Just under a third stays in its regime.
  lat["b2"] = 30e-6;  // 30 of 106
  EXPECT_EQ(select(ws, lat).groups.size(), 3u);
}

TEST(RepresentativeSet, FewerThanThreeRegimesAreSplitToThree) {
  // One regime (batch 1-3), six workloads, none an outlier: halved at the median latency, then
  // the heavier half again.
  const std::vector<Workload> one = {toy_workload("w1", 1), toy_workload("w2", 2),
                                     toy_workload("w3", 3), toy_workload("w4", 3),
                                     toy_workload("w5", 1), toy_workload("w6", 2)};
  const std::map<std::string, double> lat = {{"w1", 1e-6}, {"w2", 6e-6}, {"w3", 2e-6},
                                             {"w4", 5e-6}, {"w5", 3e-6}, {"w6", 4e-6}};
  const RepresentativeSet set = select(one, lat);
  expect_well_formed(set, one);
  ASSERT_EQ(set.groups.size(), 3u);
  EXPECT_THAT(set.groups[0].group.workloads, ElementsAre("w2", "w4"));
  EXPECT_THAT(set.groups[1].group.workloads, ElementsAre("w1", "w3", "w5"));
  EXPECT_THAT(set.groups[1].group.name, HasSubstr("lower half"));
  EXPECT_THAT(set.groups[2].group.workloads, ElementsAre("w6"));

  // Two regimes: only the heavier one is split.
  const std::vector<Workload> two = {toy_workload("s1", 1), toy_workload("s2", 2),
                                     toy_workload("l1", 4), toy_workload("l2", 5),
                                     toy_workload("l3", 6)};
  const RepresentativeSet split =
      select(two, {{"s1", 2e-6}, {"s2", 2e-6}, {"l1", 3e-6}, {"l2", 4e-6}, {"l3", 4e-6}});
  expect_well_formed(split, two);
  ASSERT_EQ(split.groups.size(), 3u);
  std::set<std::vector<std::string>> members;
  for (const RepresentativeGroup& g : split.groups) members.insert(g.group.workloads);
  EXPECT_THAT(members, UnorderedElementsAre(std::vector<std::string>{"s1", "s2"},
                                            std::vector<std::string>{"l1"},
                                            std::vector<std::string>{"l2", "l3"}));

  // Nothing left to split: fewer groups than the minimum is all there is.
  const std::vector<Workload> single = {toy_workload("only", 1)};
  const RepresentativeSet tiny = select(single, {{"only", 1e-6}});
  ASSERT_EQ(tiny.groups.size(), 1u);
  EXPECT_THAT(tiny.workloads, ElementsAre("only"));
}

TEST(RepresentativeSet, UnmeasuredWorkloadsAreChosenOnlyWhenNothingElseIs) {
  const std::vector<Workload> ws = three_regimes();
  std::map<std::string, double> lat = latency_by_batch(ws);
  lat.erase("b2");  // the median of its regime, but unknown
  lat.erase("a1");
  lat.erase("a2");
  lat.erase("a3");
  const RepresentativeSet set = select(ws, lat);
  expect_well_formed(set, ws);
  for (const RepresentativeGroup& g : set.groups) {
    if (g.group.name == "batch 4-15") {
      EXPECT_THAT(g.representatives, ElementsAre("b1"));
    }
    if (g.group.name == "batch 1-3") {
      EXPECT_THAT(g.representatives, ElementsAre("a1"));
      EXPECT_EQ(g.latency_share, 0.0);
    }
  }
  // No latency at all: still one representative per group.
  expect_well_formed(select(ws, {}), ws);
}

TEST(RepresentativeSet, MismatchedInputsAreErrors) {
  const std::vector<Workload> ws = three_regimes();
  const RegimePartition p = partition_regimes(toy_definition(), ws);
  std::vector<Workload> fewer = ws;
  fewer.pop_back();
  EXPECT_THAT(test::error_of([&] { select_representatives(p, fewer, {}); }),
              HasSubstr("workload 'c3' of regime 'batch 16-63'"));
  std::vector<Workload> more = ws;
  more.push_back(toy_workload("extra", 2));
  EXPECT_THAT(test::error_of([&] { select_representatives(p, more, {}); }),
              HasSubstr("'extra' is in no regime"));
  EXPECT_THAT(test::error_of([&] {
                select_representatives(p, ws, {{"a1", -1.0}});
              }),
              HasSubstr("latency of workload 'a1' is -1"));
}

TEST(RepresentativeSet, ShippedGdnPrefillSetIsCoveredBySmallSet) {
  const Dataset ds = Dataset::open(test::source_dir());
  const std::string name = "gdn_prefill_qk4_v8_d128_k_last";
  const std::vector<Workload> ws = ds.workloads(name);
  ASSERT_FALSE(ws.empty());
  const RegimePartition p = partition_regimes(ds.definition(name), ws);
  std::map<std::string, double> lat;
  for (const Workload& w : ws) lat[w.uuid] = 1e-7 * static_cast<double>(w.axis("total_seq_len"));

  const RepresentativeSet set = select_representatives(p, ws, lat);
  expect_well_formed(set, ws);
  EXPECT_GE(set.groups.size(), static_cast<std::size_t>(kMinimumGroups));
  EXPECT_LE(set.workloads.size(), 2 * set.groups.size());
  for (const Regime& r : p.regimes) {
    const bool covered = std::any_of(set.workloads.begin(), set.workloads.end(), [&](auto& u) {
      return std::find(r.workloads.begin(), r.workloads.end(), u) != r.workloads.end();
    });
    EXPECT_TRUE(covered) << "regime " << r.label << " has no representative";
  }
}

}  // namespace
}  // namespace kh
