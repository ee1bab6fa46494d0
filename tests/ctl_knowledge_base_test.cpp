// Knowledge bases: every shipped file loads and names only known classes; selection follows the
// file's order, honours preconditions, and never proposes again a direction that failed in the same
// state (but does once the state changed); malformed files name the file and the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "kh/core/error.h"
#include "kh/ctl/knowledge_base.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

using D = RoundRecord::Decision;

KnowledgeBase attention() {
  return load_knowledge_base(test::source_dir() / "knowledge/attention.toml");
}

BottleneckState state(Bottleneck b, std::optional<double> headroom = 5.0) {
  BottleneckState s;
  s.dominant_kernel = "split_kv_attention";
  s.bottleneck = b;
  s.headroom = headroom;
  s.evidence = "test";
  return s;
}

RoundRecord failed(const BottleneckState& s, const std::string& direction, D d = D::kReject) {
  RoundRecord r;
  r.round = 7;
  r.state_signature = s.signature();
  r.direction = direction;
  r.decision = d;
  return r;
}

TEST(KnowledgeBase, EveryShippedFileLoads) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() / "knowledge")) {
    if (entry.path().extension() != ".toml") continue;
    const KnowledgeBase kb = load_knowledge_base(entry.path());
    EXPECT_FALSE(kb.directions.empty()) << entry.path();
    EXPECT_GE(kb.version, 1);
    ++files;
  }
  EXPECT_GE(files, 2);
}

TEST(KnowledgeBase, ChoosesInFileOrderAndHonoursPreconditions) {
  const KnowledgeBase kb = attention();
  const BottleneckState slow = state(Bottleneck::kLatencyBound, 5.0);
  EXPECT_EQ(choose_direction(kb, slow, {}).direction->name, "fewer_dependent_memory_levels");
  const BottleneckState near = state(Bottleneck::kLatencyBound, 1.5);
  const DirectionChoice c = choose_direction(kb, near, {});
  EXPECT_EQ(c.direction->name, "fewer_splits_for_small_token_counts");
  ASSERT_EQ(c.skipped.size(), 1u);
  EXPECT_NE(c.skipped[0].find("needs headroom >= 2"), std::string::npos) << c.skipped[0];
  EXPECT_EQ(choose_direction(kb, state(Bottleneck::kSpilling), {}).direction->name,
            "register_budget");
}

TEST(KnowledgeBase, NeverRepeatsAFailureInTheSameStateButDoesOnceTheStateChanged) {
  const KnowledgeBase kb = attention();
  const BottleneckState s = state(Bottleneck::kLatencyBound);
  const std::vector<RoundRecord> history = {
      failed(s, "fewer_dependent_memory_levels"),
      failed(s, "fewer_splits_for_small_token_counts", D::kFailed)};
  const DirectionChoice next = choose_direction(kb, s, history);
  ASSERT_TRUE(next.direction);
  EXPECT_EQ(next.direction->name, "deeper_gather_pipeline");
  EXPECT_EQ(next.skipped.size(), 2u);

  std::vector<RoundRecord> all;  // every direction for this class failed here
  for (const Direction& d : kb.directions)
    if (std::find(d.classes.begin(), d.classes.end(), s.bottleneck) != d.classes.end())
      all.push_back(failed(s, d.name));
  ASSERT_GE(all.size(), 3u);
  const DirectionChoice none = choose_direction(kb, s, all);
  EXPECT_FALSE(none.direction);
  EXPECT_NE(none.reason.find("passed over"), std::string::npos) << none.reason;

  BottleneckState changed = s;
  changed.dominant_kernel = "merge_splits";  // another signature: the old failures do not apply
  EXPECT_EQ(choose_direction(kb, changed, all).direction->name, "fewer_dependent_memory_levels");

  // An archived or promoted round is not a failure.
  const std::vector<RoundRecord> archived = {
      failed(s, "fewer_dependent_memory_levels", D::kArchive)};
  EXPECT_EQ(choose_direction(kb, s, archived).direction->name, "fewer_dependent_memory_levels");
}

TEST(KnowledgeBase, ADirectionForOtherDefinitionsIsPassedOver) {
  const KnowledgeBase kb = load_knowledge_base(test::source_dir() / "knowledge/gdn.toml");
  const BottleneckState s = state(Bottleneck::kOccupancyRegisters);
  // Decode's tile-shape search comes first in the file, but it is for decode only.
  EXPECT_EQ(choose_direction(kb, s, {}, "gdn_decode_qk4_v8_d128_k_last").direction->name,
            "tile_shape_search");
  const DirectionChoice prefill = choose_direction(kb, s, {}, "gdn_prefill_qk4_v8_d128_k_last");
  ASSERT_TRUE(prefill.direction);
  EXPECT_EQ(prefill.direction->name, "prefill_prepared_chain_latency");
  for (const auto& surface : prefill.direction->surfaces)
    EXPECT_NE(surface.find("gdn_prefill"), std::string::npos) << surface;
  // No definition given: every direction of the family is a candidate.
  EXPECT_EQ(choose_direction(kb, s, {}).direction->name, "tile_shape_search");
}

TEST(KnowledgeBase, NoDirectionForAClassSaysSo) {
  const DirectionChoice c = choose_direction(attention(), state(Bottleneck::kComputeBound), {});
  EXPECT_FALSE(c.direction);
  EXPECT_NE(c.reason.find("no direction of attention addresses compute_bound"), std::string::npos)
      << c.reason;
}

TEST(KnowledgeBase, MalformedFilesNameTheFileAndTheField) {
  test::ScopedTempDir dir;
  auto expect_error = [&](const std::string& text, const std::string& expected) {
    const auto path = dir.path() / "kb.toml";
    std::ofstream(path) << text;
    try {
      load_knowledge_base(path);
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("kb.toml"), std::string::npos) << e.what();
    }
  };
  const std::string head = "family = \"f\"\nversion = 1\n";
  expect_error("version = 1\n", "'family'");
  expect_error("family = \"f\"\n", "'version'");
  expect_error(head, "no [[direction]]");
  expect_error(head + "[[direction]]\nname = \"a\"\nclasses = [\"slow\"]\nhypothesis = \"h\"\n",
               "unknown bottleneck class \"slow\"");
  expect_error(head + "[[direction]]\nname = \"a\"\nclasses = [\"spilling\"]\n", "'hypothesis'");
  expect_error(head +
                   "[[direction]]\nname = \"a\"\nclasses = [\"spilling\"]\nhypothesis = \"h\"\n"
                   "[[direction]]\nname = \"a\"\nclasses = [\"spilling\"]\nhypothesis = \"h\"\n",
               "used twice");
  expect_error(head +
                   "[[direction]]\nname = \"a\"\nclasses = [\"spilling\"]\nhypothesis = \"h\"\n"
                   "min_headroom = 0.5\n",
               "'min_headroom'");
  expect_error("family = \"f\"\nversion = 1\ndefinitions = [\"d\"]\n"
               "[[direction]]\nname = \"a\"\nclasses = [\"spilling\"]\nhypothesis = \"h\"\n"
               "definitions = [\"e\"]\n",
               "\"e\" is not one of the family's definitions");
  expect_error("family = [\n", "kb.toml");
}

}  // namespace
}  // namespace kh::ctl
