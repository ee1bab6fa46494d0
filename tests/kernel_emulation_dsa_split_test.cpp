// DSA sparse attention's split route (route_split_kv.cuh) with its merge (merge_splits.cuh): the
// CTAs of both kernels run on the host by the CTA emulator, one after another, against an fp64
// reference of the definition's semantics (natural-exponent softmax over each token's valid
// indices, duplicates counted twice, -1 dropped wherever it sits; base-2 LSE; a token with no row
// gives zeros and -inf). Shared memory and the outputs are poisoned (NaN bytes) before each run, so
// a row the MMAs read that nobody wrote (a block's rows past its count, not zero-filled) shows. Both
// fiber orders must give the same bits. Compiled from KH_DSA_EMULATION_DIR (the candidate until
// it is promoted), at the manifest's defaults.
//
// Covered: one split per token (the results written directly), 2 and MAX_SPLITS splits (partials
// and the merge kernel), the fused launch's single-CTA path (at most two tokens of at most
// SINGLE_CTA_ROWS rows: the first CTA takes them all, the others leave); not the fused launch's
// grid-barrier merge, which needs every CTA resident at once (the merge itself is
// kernel_emulation_dsa_merge_test's).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_on_host.h"
#include "route_split_kv.cuh"

namespace khk::dsa_attention {
// The split kernel's `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
alignas(128) unsigned char smem_bytes[sizeof(SplitSmem) + sizeof(int32_t) * kTopK];
}  // namespace khk::dsa_attention

namespace kh {
namespace {

namespace dsa = khk::dsa_attention;
using test::CtaEmulator;

constexpr std::int64_t kPages = 24;  // 1536 cache rows
constexpr std::int64_t kRows = kPages * dsa::kPageSize;

// How a token's 2048 index slots are filled.
enum class Indices {
  scattered,    // `valid` random rows (repeats possible) at random slots, the rest -1
  span,         // one contiguous run of `valid` rows from a random start, in the first slots
  duplicates,   // `valid` random slots naming only 3 distinct rows
  last_page,    // `valid` rows of the cache's last page, -1 and out-of-range rows between them
  all_padding,  // every slot -1
};

struct Token {
  Indices kind;
  int valid;
};

struct Problem {
  std::int64_t tokens = 0;
  std::vector<__nv_bfloat16> q_nope, q_pe, ckv, kpe;
  std::vector<std::int32_t> indices;
  float sm_scale = 1.0f / std::sqrt(576.0f);
};

std::vector<__nv_bfloat16> normal_bf16(std::size_t n, float sigma, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<__nv_bfloat16> v(n);
  for (auto& x : v) x = __float2bfloat16(d(rng));
  return v;
}

Problem draw(const std::vector<Token>& tokens, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.tokens = static_cast<std::int64_t>(tokens.size());
  p.q_nope = normal_bf16(tokens.size() * dsa::kHeads * dsa::kCkvDim, 1.0f, rng);
  p.q_pe = normal_bf16(tokens.size() * dsa::kHeads * dsa::kKpeDim, 1.0f, rng);
  p.ckv = normal_bf16(kRows * dsa::kCkvDim, 1.0f, rng);
  p.kpe = normal_bf16(kRows * dsa::kKpeDim, 1.0f, rng);
  p.indices.assign(tokens.size() * dsa::kTopK, -1);
  std::uniform_int_distribution<int> row(0, kRows - 1);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    std::int32_t* idx = p.indices.data() + t * dsa::kTopK;
    const int valid = tokens[t].valid;
    std::vector<int> slots(dsa::kTopK);  // distinct random slots
    for (int s = 0; s < dsa::kTopK; ++s) slots[s] = s;
    std::shuffle(slots.begin(), slots.end(), rng);
    switch (tokens[t].kind) {
      case Indices::scattered:
        for (int i = 0; i < valid; ++i) idx[slots[i]] = row(rng);
        break;
      case Indices::span: {
        const int start = std::uniform_int_distribution<int>(0, kRows - valid)(rng);
        for (int i = 0; i < valid; ++i) idx[i] = start + i;
        break;
      }
      case Indices::duplicates: {
        const int three[3] = {row(rng), row(rng), row(rng)};
        for (int i = 0; i < valid; ++i) idx[slots[i]] = three[i % 3];
        break;
      }
      case Indices::last_page:
        // Rows outside [0, cache rows) are padding too (AttentionArgs::cache_rows).
        for (int i = 0; i < valid; ++i) {
          idx[3 * i] = static_cast<int>(kRows) - 1 - i;
          idx[3 * i + 1] = static_cast<int>(kRows) + i;
        }
        break;
      case Indices::all_padding:
        break;
    }
  }
  return p;
}

struct Result {
  std::vector<__nv_bfloat16> output;  // [T, 16, 512]
  std::vector<float> lse;             // [T, 16]
};

/// The call as dispatch.cu makes it with `splits` splits per token: tokens x splits split CTAs
/// (the fused instantiation when `fused`), then, with more than one split and not fused, the merge
/// kernel's CTAs.
Result run(const Problem& p, int splits, bool fused, CtaEmulator::Order order) {
  Result r;
  r.output.resize(p.tokens * dsa::kHeads * dsa::kCkvDim);
  r.lse.resize(p.tokens * dsa::kHeads);
  std::memset(static_cast<void*>(r.output.data()), 0xff, r.output.size() * sizeof(r.output[0]));
  std::memset(r.lse.data(), 0xff, r.lse.size() * sizeof(float));
  std::vector<float> o(splits > 1 ? p.tokens * splits * dsa::kHeads * dsa::kCkvDim : 0,
                       std::numeric_limits<float>::quiet_NaN());
  std::vector<float2> ml(splits > 1 ? p.tokens * splits * dsa::kHeads : 0,
                         make_float2(std::numeric_limits<float>::quiet_NaN(), 0.0f));
  dsa::AttentionArgs args{};
  args.q_nope = p.q_nope.data();
  args.q_pe = p.q_pe.data();
  args.ckv = p.ckv.data();
  args.kpe = p.kpe.data();
  args.indices = p.indices.data();
  args.scale_log2 = p.sm_scale * dsa::kLog2e;
  args.output = r.output.data();
  args.lse = r.lse.data();
  args.tokens = p.tokens;
  args.cache_rows = kRows;
  const dsa::SplitPartials partials{o.empty() ? nullptr : o.data(),
                                    ml.empty() ? nullptr : ml.data()};

  CtaEmulator split(dsa::kThreads, fused ? dsa::split_smem_bytes(1) : dsa::split_smem_bytes(splits),
                    order, dsa::smem_bytes);
  for (std::int64_t cta = 0; cta < p.tokens * splits; ++cta)
    split.run(
        [&](test::EmulatedCta&) {
          if (fused) dsa::split_kv_attention<true>(args, partials, splits);
          else dsa::split_kv_attention<false>(args, partials, splits);
        },
        cta);
  if (splits > 1 && !fused) {
    CtaEmulator merge(dsa::kMergeThreads, 0, order);
    for (std::int64_t cta = 0; cta < p.tokens * dsa::kHeads * dsa::kMergeCtasPerHead; ++cta)
      merge.run([&](test::EmulatedCta&) { dsa::merge_splits(args, partials, splits); }, cta);
  }
  return r;
}

/// The kernel's row sums add P rounded to bf16 (the P its PV MMAs use), so its l is within 2^-8
/// of the exact sum and its LSE within log2(1 + 2^-8) = 0.0056 (1.6e-3 seen).
constexpr double kLseTolerance = 6e-3;

/// The definition's semantics in fp64 from the same bf16 inputs; bf16 outputs within 2^-7 of the
/// largest |output| of their (token, head) plus 1 % (the kernel rounds P to bf16 and the output
/// to bf16), LSE within kLseTolerance.
void expect_matches_reference(const Problem& p, const Result& r, const char* what) {
  int bad_out = 0, bad_lse = 0;
  for (std::int64_t t = 0; t < p.tokens; ++t)
    for (int h = 0; h < dsa::kHeads; ++h) {
      const __nv_bfloat16* qn = p.q_nope.data() + (t * dsa::kHeads + h) * dsa::kCkvDim;
      const __nv_bfloat16* qp = p.q_pe.data() + (t * dsa::kHeads + h) * dsa::kKpeDim;
      std::vector<double> logit;
      std::vector<std::int32_t> rows;
      for (int s = 0; s < dsa::kTopK; ++s) {
        const std::int32_t row = p.indices[t * dsa::kTopK + s];
        if (row < 0 || row >= kRows) continue;
        double dot = 0.0;
        for (int c = 0; c < dsa::kCkvDim; ++c)
          dot += double(__bfloat162float(qn[c])) * __bfloat162float(p.ckv[row * dsa::kCkvDim + c]);
        for (int c = 0; c < dsa::kKpeDim; ++c)
          dot += double(__bfloat162float(qp[c])) * __bfloat162float(p.kpe[row * dsa::kKpeDim + c]);
        logit.push_back(dot * p.sm_scale);
        rows.push_back(row);
      }
      const float got_lse = r.lse[t * dsa::kHeads + h];
      const __nv_bfloat16* got = r.output.data() + (t * dsa::kHeads + h) * dsa::kCkvDim;
      if (rows.empty()) {
        bad_lse += got_lse != -INFINITY;
        for (int c = 0; c < dsa::kCkvDim; ++c) bad_out += __bfloat162float(got[c]) != 0.0f;
        continue;
      }
      double m = -INFINITY, l = 0.0;
      for (double x : logit) m = std::max(m, x);
      for (double x : logit) l += std::exp(x - m);
      bad_lse += !(std::fabs(got_lse - (m + std::log(l)) / std::log(2.0)) <= kLseTolerance);
      std::vector<double> want(dsa::kCkvDim, 0.0);
      double largest = 0.0;
      for (int c = 0; c < dsa::kCkvDim; ++c) {
        for (std::size_t i = 0; i < rows.size(); ++i)
          want[c] += std::exp(logit[i] - m) / l *
                     __bfloat162float(p.ckv[rows[i] * dsa::kCkvDim + c]);
        largest = std::max(largest, std::fabs(want[c]));
      }
      for (int c = 0; c < dsa::kCkvDim; ++c) {
        const double g = __bfloat162float(got[c]);
        bad_out += !(std::fabs(g - want[c]) <= largest / 128.0 + 0.01 * std::fabs(want[c]));
      }
    }
  EXPECT_EQ(bad_out, 0) << what << ": output elements off the fp64 reference";
  EXPECT_EQ(bad_lse, 0) << what << ": LSE values off the fp64 reference";
}

void expect_same_bits(const Result& a, const Result& b, const char* what) {
  EXPECT_EQ(std::memcmp(a.output.data(), b.output.data(), a.output.size() * sizeof(a.output[0])),
            0)
      << what;
  EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(float)), 0) << what;
}

void check(const Problem& p, int splits, bool fused, const char* what) {
  const Result up = run(p, splits, fused, CtaEmulator::Order::ascending);
  expect_matches_reference(p, up, what);
  expect_same_bits(up, run(p, splits, fused, CtaEmulator::Order::descending), what);
}

TEST(DsaSplitRoute, OneSplitPerTokenMatchesTheReference) {
  // 1-130 valid rows: one, two and three 64-row blocks, a block of a single row, and the rows
  // past a block's count that the MMAs read (zero-filled).
  const Problem p = draw({{Indices::scattered, 130},
                          {Indices::span, 1},
                          {Indices::duplicates, 64},
                          {Indices::last_page, 27},
                          {Indices::all_padding, 0},
                          {Indices::span, 65}},
                         11);
  check(p, 1, false, "one split");
}

TEST(DsaSplitRoute, SplitsAndTheMergeKernelMatchTheReference) {
  const Problem p = draw({{Indices::scattered, 600},
                          {Indices::span, 300},
                          {Indices::all_padding, 0},
                          {Indices::duplicates, 40},
                          {Indices::last_page, 9}},
                         12);
  check(p, 2, false, "two splits");
  check(p, dsa::kMaxSplits, false, "MAX_SPLITS splits");
}

TEST(DsaSplitRoute, FusedSingleCtaPathMatchesTheReference) {
  if (dsa::kFusedMaxTokens < 2 || dsa::kSingleCtaMaxRows < 100)
    GTEST_SKIP() << "FUSED_TOKENS < 2 or SINGLE_CTA_ROWS < 100 in this build";
  const Problem p = draw({{Indices::span, 100}, {Indices::scattered, 33}}, 13);
  check(p, dsa::kMaxSplits, true, "fused, one CTA per token");
  const Problem empty = draw({{Indices::all_padding, 0}}, 14);
  check(empty, dsa::kMaxSplits, true, "fused, a token without rows");
}

}  // namespace
}  // namespace kh
