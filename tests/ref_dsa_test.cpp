// The DSA CPU references against hand-derived cases: sparse attention (softmax over the selected
// rows, base-2 lse, padding anywhere, duplicates, empty rows) and the top-k indexer (paged FP8
// K cache in the deep_gemm layout, ReLU-weighted scores, block-table mapping, top-2048).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/minifloat.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/dsa_index_cache.h"
#include "test_support.h"

namespace kh {
namespace {

using test::axes_with;
using test::bf16;
using test::expect_bf16_near;
using test::zero_inputs;

void poison(OutputSet& outputs) {
  for (auto& item : outputs)
    for (std::int64_t i = 0; i < item.tensor.numel(); ++i) item.tensor.set(i, 77.0);
}

// ---------------------------------------------------------------- sparse attention

constexpr int kHeads = 16, kCkv = 512, kKpe = 64, kTopK = 2048;

class RefDsaAttention : public ::testing::Test {
 protected:
  Definition def = test::shipped_definition("dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64");
  AxisValues axes = axes_with(def, {{"num_tokens", 2}, {"num_pages", 2}});
  InputSet inputs = zero_inputs(def, axes);
  HostTensor& q_nope = inputs.at("q_nope");
  HostTensor& q_pe = inputs.at("q_pe");
  HostTensor& ckv = inputs.at("ckv_cache");
  HostTensor& kpe = inputs.at("kpe_cache");
  HostTensor& indices = inputs.at("sparse_indices");
  static constexpr double kSmScale = 0.125;

  void SetUp() override {
    for (std::int64_t i = 0; i < indices.numel(); ++i) indices.set(i, -1);
    inputs.at("sm_scale").set(0, kSmScale);
  }
  void select(int token, const std::vector<std::pair<int, int>>& position_and_slot) {
    for (auto [position, slot] : position_and_slot) indices.set(token * kTopK + position, slot);
  }
  // Two cache rows 3 and 7 whose key part along dim 0 is 1, so q_nope = e_0 gives equal logits.
  void plant_rows_3_and_7() {
    for (int d = 1; d < kCkv; ++d) {
      ckv.set(3 * kCkv + d, d % 4);
      ckv.set(7 * kCkv + d, d % 3);
    }
    ckv.set(3 * kCkv, 1.0);
    ckv.set(7 * kCkv, 1.0);
  }
  double row(int slot, int d) const { return ckv.get(slot * kCkv + d); }
};

TEST_F(RefDsaAttention, OneValidIndexGivesThatRowAndLseIsLogitOverLn2) {
  for (int d = 0; d < kCkv; ++d) ckv.set(5 * kCkv + d, ((d % 7) - 3) * 0.125);
  kpe.set(5 * kKpe, 0.25);
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < kHeads; ++h) {
      q_nope.set((t * kHeads + h) * kCkv, h + 1);
      q_pe.set((t * kHeads + h) * kKpe, 1.0);
    }
  select(0, {{0, 5}});
  select(1, {{kTopK - 1, 5}});  // a lone valid index at the end of the row
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < kHeads; ++h) {
      const double logit = kSmScale * (-0.375 * (h + 1) + 0.25);
      EXPECT_NEAR(out.at("lse").get(t * kHeads + h), logit / std::numbers::ln2, 1e-6);
      for (int d = 0; d < kCkv; ++d)
        ASSERT_EQ(out.at("output").get((t * kHeads + h) * kCkv + d), row(5, d));
    }
}

TEST_F(RefDsaAttention, EqualLogitsAverageAndPaddingAnywhereIsDropped) {
  plant_rows_3_and_7();
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < kHeads; ++h) q_nope.set((t * kHeads + h) * kCkv, 1.0);
  select(0, {{0, 3}, {1, 7}});
  select(1, {{1, 3}, {5, 7}});  // -1 before, between and after
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < kHeads; ++h) {
      // Two equal logits l: lse = log2(2 e^l) = (l + ln 2) / ln 2.
      EXPECT_NEAR(out.at("lse").get(t * kHeads + h),
                  (kSmScale + std::numbers::ln2) / std::numbers::ln2, 1e-6);
      for (int d = 0; d < kCkv; ++d)
        ASSERT_EQ(out.at("output").get((t * kHeads + h) * kCkv + d), (row(3, d) + row(7, d)) / 2)
            << t << " " << h << " " << d;
    }
}

TEST_F(RefDsaAttention, DuplicatedIndexCountsTwice) {
  plant_rows_3_and_7();
  for (int h = 0; h < kHeads; ++h) q_nope.set(h * kCkv, 1.0);
  select(0, {{0, 3}, {1, 3}, {2, 7}});
  select(1, {{0, 7}});
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int h = 0; h < kHeads; ++h) {
    EXPECT_NEAR(out.at("lse").get(h), (kSmScale + std::log(3.0)) / std::numbers::ln2, 1e-6);
    for (int d = 0; d < kCkv; ++d)
      expect_bf16_near(out.at("output").get(h * kCkv + d), (2 * row(3, d) + row(7, d)) / 3,
                       "d " + std::to_string(d));
  }
}

TEST_F(RefDsaAttention, UnequalLogitsFollowTheSoftmaxIncludingTheRotaryPart) {
  plant_rows_3_and_7();
  ckv.set(7 * kCkv, -1.0);
  kpe.set(7 * kKpe + 2, 2.0);
  for (int h = 0; h < kHeads; ++h) {
    q_nope.set(h * kCkv, h - 4.0);
    q_pe.set(h * kKpe + 2, 0.5 * h);
  }
  select(0, {{0, 3}, {kTopK - 1, 7}});
  select(1, {{0, 3}});
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int h = 0; h < kHeads; ++h) {
    const double l3 = kSmScale * (h - 4.0);
    const double l7 = kSmScale * (-(h - 4.0) + 2.0 * 0.5 * h);
    const double sum = std::exp(l3) + std::exp(l7);
    EXPECT_NEAR(out.at("lse").get(h), std::log(sum) / std::numbers::ln2, 1e-6);
    for (int d = 0; d < kCkv; ++d)
      expect_bf16_near(out.at("output").get(h * kCkv + d),
                       (std::exp(l3) * row(3, d) + std::exp(l7) * row(7, d)) / sum,
                       "h " + std::to_string(h) + " d " + std::to_string(d));
  }
}

TEST_F(RefDsaAttention, AllPaddingRowGivesZerosAndMinusInfinity) {
  plant_rows_3_and_7();
  for (int h = 0; h < kHeads; ++h) q_nope.set((kHeads + h) * kCkv, 1.0);
  select(1, {{0, 3}});
  OutputSet out = allocate_outputs(def, axes);
  poison(out);
  dsa_sparse_attention_reference(def, axes, inputs, out);
  for (int h = 0; h < kHeads; ++h) {
    EXPECT_EQ(out.at("lse").get(h), -std::numeric_limits<double>::infinity());
    EXPECT_NEAR(out.at("lse").get(kHeads + h), kSmScale / std::numbers::ln2, 1e-6);
    for (int d = 0; d < kCkv; ++d) {
      ASSERT_EQ(out.at("output").get(h * kCkv + d), 0.0);
      ASSERT_EQ(out.at("output").get((kHeads + h) * kCkv + d), row(3, d));
    }
  }
}

TEST_F(RefDsaAttention, IndexOutOfRangeIsAnError) {
  select(0, {{1, -2}});
  try {
    run_cpu_reference(def, axes, inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sparse_indices[0, 1] = -2"), std::string::npos)
        << e.what();
  }
  select(0, {{1, 2 * 64}});  // num_pages * page_size: one past the cache
  EXPECT_THROW(run_cpu_reference(def, axes, inputs), Error);
  select(0, {{1, 2 * 64 - 1}});
  EXPECT_NO_THROW(run_cpu_reference(def, axes, inputs));
}

// ---------------------------------------------------------------- top-k indexer

constexpr int kPage = 64;

void set_key(HostTensor& cache, std::int64_t page, int offset, int d, float value, float scale) {
  cache.bytes()[dsa::key_value_byte(page, offset, d)] = std::byte{float_to_e4m3(value)};
  std::memcpy(cache.bytes() + dsa::key_scale_byte(page, offset), &scale, sizeof scale);
}

class RefDsaIndexer : public ::testing::Test {
 protected:
  Definition def = test::shipped_definition("dsa_topk_indexer_fp8_h64_d128_topk2048_ps64");

  AxisValues indexer_axes(std::int64_t batch, std::int64_t max_pages, std::int64_t pages) {
    return axes_with(def,
                     {{"batch_size", batch}, {"max_num_pages", max_pages}, {"num_pages", pages}});
  }
  // q[b, head, 0] = q0 and weights[b, head] = w: the score of a token whose key has value x
  // along dim 0 (and zeros elsewhere) is w * relu(q0 * x) for that head.
  static void set_head(InputSet& inputs, int b, int head, float q0, float w) {
    inputs.at("q_index_fp8").set((b * 64 + head) * 128, q0);
    inputs.at("weights").set(b * 64 + head, w);
  }
  static std::vector<std::int32_t> row(const OutputSet& out, int b) {
    const std::int32_t* p = out.at("topk_indices").data<std::int32_t>() + b * kTopK;
    return {p, p + kTopK};
  }
  static std::vector<std::int32_t> padded(std::vector<std::int32_t> slots) {
    slots.resize(kTopK, -1);
    return slots;
  }
};

TEST_F(RefDsaIndexer, ShortSequenceReturnsItsSlotsByReluWeightedScoreAndEmptyRowIsPadding) {
  const AxisValues axes = indexer_axes(2, 32, 40);
  InputSet inputs = zero_inputs(def, axes);
  // Head 0 sees +x with weight 1, head 1 sees -x with weight 2: score = relu(x) + 2 relu(-x).
  set_head(inputs, 0, 0, 1.0f, 1.0f);
  set_head(inputs, 0, 1, -1.0f, 2.0f);
  HostTensor& cache = inputs.at("k_index_cache_fp8");
  set_key(cache, 7, 0, 0, 1.0f, 1.0f);   // score 1
  set_key(cache, 7, 1, 0, -1.5f, 1.0f);  // score 3
  set_key(cache, 7, 2, 0, 1.0f, 2.0f);   // score 2 (through the token's scale)
  set_key(cache, 7, 3, 0, 8.0f, 1.0f);   // beyond seq_len: never selected
  inputs.at("seq_lens").set(0, 3);
  inputs.at("block_table").set(0, 7);
  inputs.at("seq_lens").set(1, 0);
  inputs.at("block_table").set(32, 999);  // not a page, but an empty row reads no entry
  OutputSet out = allocate_outputs(def, axes);
  poison(out);
  dsa_topk_indexer_reference(def, axes, inputs, out);
  EXPECT_EQ(row(out, 0), padded({7 * kPage + 1, 7 * kPage + 2, 7 * kPage + 0}));
  EXPECT_EQ(row(out, 1), padded({}));
}

TEST_F(RefDsaIndexer, SequenceSpanningPagesMapsThroughTheBlockTable) {
  const AxisValues axes = indexer_axes(1, 32, 16);
  InputSet inputs = zero_inputs(def, axes);
  set_head(inputs, 0, 5, 2.0f, 0.5f);
  HostTensor& cache = inputs.at("k_index_cache_fp8");
  set_key(cache, 9, 1, 0, 5.0f, 1.0f);  // local token 65 = page 9, offset 1
  set_key(cache, 3, 2, 0, 4.0f, 1.0f);  // local token 2 = page 3, offset 2
  set_key(cache, 9, 6, 0, 9.0f, 1.0f);  // local token 70: beyond seq_len 70
  inputs.at("seq_lens").set(0, 70);
  inputs.at("block_table").set(0, 3);
  inputs.at("block_table").set(1, 9);
  for (int p = 2; p < 32; ++p) inputs.at("block_table").set(p, -5);  // unused entries
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  // Scores 5, 4, then 68 tokens tied at 0 (ties go to the lower position).
  std::vector<std::int32_t> expected = {9 * kPage + 1, 3 * kPage + 2};
  for (int j = 0; j < 70; ++j)
    if (j != 65 && j != 2) expected.push_back(j < 64 ? 3 * kPage + j : 9 * kPage + (j - 64));
  EXPECT_EQ(row(out, 0), padded(expected));
}

TEST_F(RefDsaIndexer, LongSequenceSelectsThePlanted2048Best) {
  constexpr int kLen = 2100, kPages = 34;
  const AxisValues axes = indexer_axes(1, kPages, kPages);
  InputSet inputs = zero_inputs(def, axes);
  set_head(inputs, 0, 63, 1.0f, 1.0f);
  HostTensor& cache = inputs.at("k_index_cache_fp8");
  inputs.at("seq_lens").set(0, kLen);
  for (int p = 0; p < kPages; ++p) inputs.at("block_table").set(p, kPages - 1 - p);
  auto slot_of = [&](int j) { return (kPages - 1 - j / kPage) * kPage + j % kPage; };
  // 52 tokens (j = 40 i + 7) get a negative key, hence score 0; the other 2048 score their
  // distinct scale 1 + j / 4096 > 0. The top 2048 are exactly those, best = highest j first.
  auto excluded = [](int j) { return j % 40 == 7 && j / 40 < 52; };
  for (int j = 0; j < kLen; ++j)
    set_key(cache, slot_of(j) / kPage, j % kPage, 0, excluded(j) ? -1.0f : 1.0f,
            1.0f + j / 4096.0f);
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  std::vector<std::int32_t> expected;
  for (int j = kLen - 1; j >= 0; --j)
    if (!excluded(j)) expected.push_back(slot_of(j));
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(kTopK));
  EXPECT_EQ(row(out, 0), expected);
}

TEST_F(RefDsaIndexer, KCacheScalesFollowThe8192ValueBytesOfEachPage) {
  // Raw bytes, not the layout helpers: page p starts at 8448 p; token i's 128 FP8 values at
  // +128 i; its float32 scale at +8192 + 4 i (not at +132 i + 128).
  EXPECT_EQ(dsa::kPageBytes, 8448);
  EXPECT_EQ(dsa::key_scale_byte(1, 2), 8448 + 8192 + 8);
  EXPECT_EQ(dsa::key_value_byte(1, 2, 3), 8448 + 256 + 3);
  const AxisValues axes = indexer_axes(1, 32, 3);
  InputSet inputs = zero_inputs(def, axes);
  set_head(inputs, 0, 0, 1.0f, 1.0f);
  std::byte* page = inputs.at("k_index_cache_fp8").bytes() + 8448;
  const float scales[3] = {1.0f, 5.0f, 3.0f};
  for (int i = 0; i < 3; ++i) {
    page[i * 128] = std::byte{0x38};  // e4m3 1.0
    std::memcpy(page + 8192 + 4 * i, &scales[i], 4);
  }
  ASSERT_EQ(float_to_e4m3(1.0f), 0x38);
  inputs.at("seq_lens").set(0, 3);
  inputs.at("block_table").set(0, 1);
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  EXPECT_EQ(row(out, 0), padded({kPage + 1, kPage + 2, kPage + 0}));
}

TEST_F(RefDsaIndexer, RandomRowIsRankedByIndexScoreExactly) {
  // The reference's scores must be kh::dsa::index_score's (the checker recomputes with it): on
  // random data its output is exactly the index_score ranking.
  constexpr int kLen = 300;
  const AxisValues axes = indexer_axes(2, 32, 12);
  InputSet inputs = zero_inputs(def, axes);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const char* name : {"q_index_fp8", "weights"})
    for (std::int64_t i = 0; i < inputs.at(name).numel(); ++i)
      inputs.at(name).set(i, name[0] == 'w' ? (uniform(rng) + 1.0) / 8 : 4 * uniform(rng));
  HostTensor& cache = inputs.at("k_index_cache_fp8");
  for (int page = 0; page < 12; ++page)
    for (int offset = 0; offset < kPage; ++offset)
      for (int d = 0; d < 128; ++d)
        set_key(cache, page, offset, d, static_cast<float>(3 * uniform(rng)),
                static_cast<float>(0.01 + 0.01 * uniform(rng)));
  for (int b = 0; b < 2; ++b) {
    inputs.at("seq_lens").set(b, kLen - 100 * b);
    for (int p = 0; p < 5; ++p) inputs.at("block_table").set(b * 32 + p, (7 * p + 3 * b) % 12);
  }
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int b = 0; b < 2; ++b) {
    const int len = kLen - 100 * b;
    std::vector<std::pair<double, std::int32_t>> ranked;
    for (int j = 0; j < len; ++j) {
      const std::int32_t slot = ((7 * (j / kPage) + 3 * b) % 12) * kPage + j % kPage;
      ranked.emplace_back(
          -dsa::index_score(inputs.at("q_index_fp8"), inputs.at("weights"), cache, b, slot), slot);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::int32_t> expected;
    for (const auto& [negative_score, slot] : ranked) expected.push_back(slot);
    EXPECT_EQ(row(out, b), padded(expected)) << b;
  }
}

TEST_F(RefDsaIndexer, InvalidLengthsAndPagesAreErrors) {
  const AxisValues axes = indexer_axes(1, 32, 4);
  InputSet inputs = zero_inputs(def, axes);
  inputs.at("seq_lens").set(0, 32 * 64 + 1);
  EXPECT_THROW(run_cpu_reference(def, axes, inputs), Error);
  inputs.at("seq_lens").set(0, -1);
  EXPECT_THROW(run_cpu_reference(def, axes, inputs), Error);
  inputs.at("seq_lens").set(0, 65);
  inputs.at("block_table").set(1, 4);  // the second page is needed and is not a page
  try {
    run_cpu_reference(def, axes, inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_table[0, 1] = 4"), std::string::npos) << e.what();
  }
  inputs.at("block_table").set(1, 3);
  EXPECT_NO_THROW(run_cpu_reference(def, axes, inputs));
}

}  // namespace
}  // namespace kh
