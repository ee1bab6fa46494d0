// The DSA top-k indexer policy: the selection is judged as a set of token slots by recomputed
// scores. Inputs are built by hand so each token's score is known: head 0 of q has a single 1.0
// at dim 0 with weight 1 (every other head weighs 0), each token's key is 1.0 at dim 0, so its
// score is its float32 K scale.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "kh/check/checker.h"
#include "kh/core/minifloat.h"
#include "kh/ref/dsa_index_cache.h"
#include "test_support.h"

namespace kh {
namespace {

constexpr std::int64_t kBatch = 2;
constexpr std::int64_t kCachePages = 40;
constexpr std::int64_t kMaxPages = 34;
constexpr std::int32_t kLongSeq = 2100;  // row 0: longer than topk, so 52 tokens are left out
constexpr std::int32_t kShortSeq = 100;  // row 1: every token selected, the rest padding
constexpr double kInf = std::numeric_limits<double>::infinity();

// Row 0 scores 10 + 0.5 * perm(j): distinct, 0.5 apart, in scrambled position order. The
// cut-off falls between perm 51 (35.5, left out) and perm 52 (36.0, selected): a gap of 1.4%,
// beyond the 1% tolerance.
std::int64_t perm(std::int64_t j) {
  return (j * 13) % kLongSeq;
}

class TopKCase {
 public:
  TopKCase() {
    inputs_.add("q_index_fp8", HostTensor(DType::kFloat8E4M3, {kBatch, 64, 128}));
    inputs_.add("k_index_cache_fp8", HostTensor(DType::kInt8, {kCachePages, 64, 1, 132}));
    inputs_.add("weights", HostTensor(DType::kFloat32, {kBatch, 64}));
    inputs_.add("seq_lens", HostTensor(DType::kInt32, {kBatch}));
    inputs_.add("block_table", HostTensor(DType::kInt32, {kBatch, kMaxPages}));
    for (std::int64_t b = 0; b < kBatch; ++b) {
      inputs_.at("q_index_fp8").set(b * 64 * 128, 1.0);
      inputs_.at("weights").set(b * 64, 1.0);
    }
    HostTensor& table = inputs_.at("block_table");
    // Row 0: pages 33, 32, ..., 0; its last column (page 0) lies beyond its 2100 tokens.
    for (std::int64_t s = 0; s < kMaxPages; ++s) table.set(s, static_cast<double>(33 - s));
    // Row 1: pages 37, 35, then 36 (beyond its 100 tokens), then -1.
    for (std::int64_t s = 0; s < kMaxPages; ++s) table.set(kMaxPages + s, -1);
    table.set(kMaxPages + 0, 37);
    table.set(kMaxPages + 1, 35);
    table.set(kMaxPages + 2, 36);
    inputs_.at("seq_lens").set(0, kLongSeq);
    inputs_.at("seq_lens").set(1, kShortSeq);
    for (std::int64_t j = 0; j < kLongSeq; ++j)
      set_score(0, j, static_cast<float>(10 + 0.5 * static_cast<double>(perm(j))));
    for (std::int64_t j = 0; j < kShortSeq; ++j)
      set_score(1, j, static_cast<float>(1 + 0.25 * static_cast<double>(j)));
  }

  const InputSet& inputs() const { return inputs_; }
  std::int32_t seq_len(std::int64_t b) const { return b == 0 ? kLongSeq : kShortSeq; }

  // Global token slot of position j of row b.
  std::int32_t slot(std::int64_t b, std::int64_t j) const {
    const auto page = static_cast<std::int32_t>(
        inputs_.at("block_table").get(b * kMaxPages + j / dsa::kPageSize));
    return page * dsa::kPageSize + static_cast<std::int32_t>(j % dsa::kPageSize);
  }

  // Gives token j of row b the key 1.0 at dim 0 with scale `score`, hence that score.
  void set_score(std::int64_t b, std::int64_t j, float score) {
    const std::int32_t s = slot(b, j);
    HostTensor& cache = inputs_.at("k_index_cache_fp8");
    const std::int64_t page = s / dsa::kPageSize;
    const int offset = s % dsa::kPageSize;
    cache.bytes()[dsa::key_value_byte(page, offset, 0)] = std::byte{float_to_e4m3(1.0f)};
    std::memcpy(cache.bytes() + dsa::key_scale_byte(page, offset), &score, sizeof score);
    scores_[b].resize(static_cast<std::size_t>(seq_len(b)));
    scores_[b][j] = score;
  }

  // The top-k as the definition's reference computes it: highest scores first, then -1.
  OutputSet reference() const {
    HostTensor indices(DType::kInt32, {kBatch, dsa::kTopK});
    for (std::int64_t b = 0; b < kBatch; ++b) {
      std::vector<std::int64_t> order(static_cast<std::size_t>(seq_len(b)));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
        return scores_[b][x] > scores_[b][y];
      });
      for (std::int64_t k = 0; k < dsa::kTopK; ++k)
        indices.set(b * dsa::kTopK + k,
                    k < static_cast<std::int64_t>(order.size()) ? slot(b, order[k]) : -1);
    }
    OutputSet out;
    out.add("topk_indices", std::move(indices));
    return out;
  }

  // Position in row 0 of the token with permuted rank p.
  static std::int64_t position_of_perm(std::int64_t p) {
    for (std::int64_t j = 0; j < kLongSeq; ++j)
      if (perm(j) == p) return j;
    return -1;
  }

 private:
  InputSet inputs_;
  std::vector<float> scores_[kBatch];
};

class CheckTopKSet : public ::testing::Test {
 protected:
  CheckResult check(const OutputSet& solution, bool official = false) const {
    return check_outputs(def_, case_.inputs(), reference_, solution,
                         official_options(def_, official));
  }
  void rebuild_reference() { reference_ = case_.reference(); }
  HostTensor& indices(OutputSet& set) { return set.at("topk_indices"); }
  std::int32_t at(const OutputSet& set, std::int64_t b, std::int64_t k) const {
    return static_cast<std::int32_t>(set.at("topk_indices").get(b * dsa::kTopK + k));
  }
  void put(OutputSet& set, std::int64_t b, std::int64_t k, std::int64_t value) {
    indices(set).set(b * dsa::kTopK + k, static_cast<double>(value));
  }
  // Where slot `s` sits in row b of `set`, or -1.
  std::int64_t find(const OutputSet& set, std::int64_t b, std::int32_t s) const {
    for (std::int64_t k = 0; k < dsa::kTopK; ++k)
      if (at(set, b, k) == s) return k;
    return -1;
  }

  Definition def_ = test::shipped_definition("dsa_topk_indexer_fp8_h64_d128_topk2048_ps64");
  TopKCase case_;
  OutputSet reference_ = case_.reference();
};

TEST_F(CheckTopKSet, TheReferenceItselfPasses) {
  ASSERT_EQ(policy_for(def_), CheckPolicy::kTopKSet);
  const CheckResult r = check(reference_.clone());
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_EQ(r.max_absolute_error, 0);
  EXPECT_EQ(r.matched_ratio, 1);
}

TEST_F(CheckTopKSet, IndicesInAnotherOrderPass) {
  OutputSet sol = reference_.clone();
  HostTensor& t = indices(sol);
  std::int32_t* data = t.data<std::int32_t>();
  std::reverse(data, data + dsa::kTopK);  // row 0, all valid
  std::rotate(data + dsa::kTopK, data + dsa::kTopK + 37, data + dsa::kTopK + kShortSeq);
  const CheckResult r = check(sol);
  EXPECT_TRUE(r.passed()) << r.message;
}

// The trial runner leaves device-drawn inputs (q, K cache, weights) as zeroed host placeholders
// unless check_reads_inputs says the check needs them.
TEST_F(CheckTopKSet, OnlyARowWithAnotherSetNeedsTheInputs) {
  OutputSet reordered = reference_.clone();
  std::int32_t* data = indices(reordered).data<std::int32_t>();
  std::reverse(data, data + dsa::kTopK);
  EXPECT_FALSE(check_reads_inputs(def_, reference_, reordered));

  InputSet placeholders = case_.inputs().clone();
  HostTensor& cache = placeholders.at("k_index_cache_fp8");
  std::memset(cache.bytes(), 0, cache.nbytes());
  const CheckResult r =
      check_outputs(def_, placeholders, reference_, reordered, official_options(def_, false));
  EXPECT_TRUE(r.passed()) << r.message;

  OutputSet swapped = reference_.clone();
  const std::int64_t left_out = TopKCase::position_of_perm(51);
  put(swapped, 0, find(swapped, 0, case_.slot(0, TopKCase::position_of_perm(52))),
      case_.slot(0, left_out));
  EXPECT_TRUE(check_reads_inputs(def_, reference_, swapped));

  OutputSet narrow;  // rejected on shape before any input is read
  narrow.add("topk_indices", HostTensor(DType::kInt32, {kBatch, 1024}));
  EXPECT_FALSE(check_reads_inputs(def_, reference_, narrow));
  EXPECT_FALSE(check_reads_inputs(test::shipped_definition("gdn_decode_qk4_v8_d128_k_last"),
                                  reference_, swapped));
}

TEST_F(CheckTopKSet, AnyNegativeValueIsPadding) {
  OutputSet sol = reference_.clone();
  for (std::int64_t k = kShortSeq; k < dsa::kTopK; ++k) put(sol, 1, k, -7 - k);
  EXPECT_TRUE(check(sol).passed());
}

TEST_F(CheckTopKSet, ADuplicatedIndexFails) {
  OutputSet sol = reference_.clone();
  put(sol, 1, 5, at(sol, 1, 4));
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_TRUE(r.terminal);
  EXPECT_EQ(r.max_absolute_error, kInf);
  EXPECT_NE(r.message.find("duplicate index"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("batch row 1"), std::string::npos) << r.message;
}

TEST_F(CheckTopKSet, AnIndexOnAPageOutsideTheRowsBlockTableFails) {
  OutputSet sol = reference_.clone();
  put(sol, 1, 0, 38 * 64 + 5);  // page 38 belongs to no row
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_EQ(r.max_absolute_error, kInf);
  EXPECT_NE(r.message.find("out-of-range/unreachable index 2437"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("batch row 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("page 38 is not in block_table row 1"), std::string::npos) << r.message;
}

TEST_F(CheckTopKSet, AnIndexOnAnotherRowsPageFails) {
  OutputSet sol = reference_.clone();
  put(sol, 1, 0, case_.slot(0, 7));  // a real token, but of row 0
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectNumerical);
}

TEST_F(CheckTopKSet, AnIndexAtOrBeyondSeqLenFails) {
  OutputSet sol = reference_.clone();
  put(sol, 1, 0, 35 * 64 + 50);  // page 35 is column 1 of row 1: token 114 >= 100
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("seq_lens[1] = 100"), std::string::npos) << r.message;

  sol = reference_.clone();
  put(sol, 1, 0, 35 * 64 + 36);  // token 100: exactly seq_len
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectNumerical);

  sol = reference_.clone();
  put(sol, 0, 0, 0 * 64 + 3);  // page 0 is row 0's spare last column: token 2115 >= 2100
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectNumerical);
}

TEST_F(CheckTopKSet, UnwrittenPaddingFails) {
  // A kernel that leaves the padding at 0 (a zero-filled buffer) instead of writing -1.
  OutputSet sol = reference_.clone();
  for (std::int64_t k = kShortSeq; k < dsa::kTopK; ++k) put(sol, 1, k, 0);
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("out-of-range/unreachable index 0"), std::string::npos) << r.message;
}

TEST_F(CheckTopKSet, FewerValidEntriesThanTheReferenceFail) {
  OutputSet sol = reference_.clone();
  put(sol, 0, 100, -1);  // drops one of row 0's 2048 tokens
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_FALSE(r.terminal);  // a score mismatch, not an invalid index
  EXPECT_EQ(r.max_absolute_error, kInf);
  EXPECT_EQ(r.max_relative_error, kInf);
  EXPECT_NE(r.message.find("batch row 0"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("batch row 0: the solution selects 2047 valid indices, the "
                           "reference 2048"),
            std::string::npos)
      << r.message;

  sol = reference_.clone();
  put(sol, 1, 99, -1);  // row 1 returns 99 of its 100 tokens
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectNumerical);
}

TEST_F(CheckTopKSet, AValidIndexWhereTheReferenceHasPaddingFails) {
  // A reference with padding where a reachable token exists (hand-made): the solution's extra
  // valid entry meets the reference's -inf.
  const std::int32_t dropped = at(reference_, 1, 99);
  put(reference_, 1, 99, -1);
  OutputSet sol = case_.reference();
  ASSERT_NE(find(sol, 1, dropped), -1);
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_EQ(r.max_absolute_error, kInf);
  EXPECT_NE(r.message.find("(padding)"), std::string::npos) << r.message;
}

TEST_F(CheckTopKSet, ATieBrokenTheOtherWayPasses) {
  // Two tokens with identical keys at the cut-off: either may be selected.
  const std::int64_t selected = TopKCase::position_of_perm(52);
  const std::int64_t left_out = TopKCase::position_of_perm(51);
  case_.set_score(0, left_out, 36.0f);  // equal to the selected token's score
  rebuild_reference();
  const std::int32_t in = case_.slot(0, selected);
  const std::int32_t out = case_.slot(0, left_out);
  const std::int64_t k_in = find(reference_, 0, in);
  const std::int64_t k_out = find(reference_, 0, out);
  ASSERT_TRUE((k_in >= 0) != (k_out >= 0)) << "exactly one of the tied tokens is selected";
  OutputSet sol = reference_.clone();
  if (k_in >= 0)
    put(sol, 0, k_in, out);
  else
    put(sol, 0, k_out, in);
  const CheckResult r = check(sol);
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_EQ(r.max_absolute_error, 0);
}

TEST_F(CheckTopKSet, ANearTieWithinToleranceIsAccepted) {
  const std::int64_t selected = TopKCase::position_of_perm(52);  // score 36.0
  const std::int64_t left_out = TopKCase::position_of_perm(51);
  case_.set_score(0, left_out, 36.0f * (1 - 0.005f));  // 0.5% below: within rtol
  rebuild_reference();
  OutputSet sol = reference_.clone();
  const std::int64_t k = find(sol, 0, case_.slot(0, selected));
  ASSERT_GE(k, 0);
  ASSERT_EQ(find(sol, 0, case_.slot(0, left_out)), -1);
  put(sol, 0, k, case_.slot(0, left_out));
  const CheckResult r = check(sol);
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_NEAR(r.max_absolute_error, 0.18, 1e-4);
}

TEST_F(CheckTopKSet, ASwapWithAScoreGapBeyondToleranceFails) {
  const std::int64_t selected = TopKCase::position_of_perm(52);  // score 36.0
  const std::int64_t left_out = TopKCase::position_of_perm(51);  // score 35.5
  OutputSet sol = reference_.clone();
  const std::int64_t k = find(sol, 0, case_.slot(0, selected));
  ASSERT_GE(k, 0);
  put(sol, 0, k, case_.slot(0, left_out));
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NEAR(r.max_absolute_error, 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(r.matched_ratio, 1.0 - 1.0 / (kBatch * dsa::kTopK));
  EXPECT_NE(r.message.find("batch row 0, rank 2047"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("solution score 35.5"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("reference score 36"), std::string::npos) << r.message;
}

TEST_F(CheckTopKSet, AWrongSetFarFromTheCutOffFails) {
  // Selecting the lowest-scored token instead of the highest.
  const std::int64_t best = TopKCase::position_of_perm(kLongSeq - 1);
  const std::int64_t worst = TopKCase::position_of_perm(0);
  OutputSet sol = reference_.clone();
  put(sol, 0, find(sol, 0, case_.slot(0, best)), case_.slot(0, worst));
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("batch row 0"), std::string::npos) << r.message;
  EXPECT_NEAR(r.max_absolute_error, 36.0 - 10.0, 1e-4);  // the last ranks: 10 against 36
}

TEST_F(CheckTopKSet, ShapeAndDtypeAreCheckedFirst) {
  OutputSet narrow;
  narrow.add("topk_indices", HostTensor(DType::kInt32, {kBatch, 1024}));
  EXPECT_EQ(check(narrow).status, EvalStatus::kIncorrectShape);

  OutputSet wide;
  wide.add("topk_indices", HostTensor(DType::kInt64, {kBatch, dsa::kTopK}));
  EXPECT_EQ(check(wide).status, EvalStatus::kIncorrectDtype);
}

}  // namespace
}  // namespace kh
