// DSA sparse attention's merge of split partials (merge_splits.cuh): the second kernel
// (merge_splits) and the split kernel's in-grid merge (merge_heads_in_grid), their per-CTA code
// run on the host by the CTA emulator over drawn partials, against an fp64 merge of the same
// partials. Some splits are empty, with NaN in their O and a stray m, as on the device (an empty
// split never writes O); one token has no split with rows (output 0, LSE -inf); the outputs are
// poisoned before each run; both fiber orders must agree bit for bit (a value read across lanes
// without an exchange would differ). Built once per knob configuration tests/CMakeLists.txt
// lists (MAX_SPLITS decides how many splits each lane weighs: 16, 64 and 256).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_on_host.h"
#include "merge_splits.cuh"

namespace kh {
namespace {

namespace dsa = khk::dsa_attention;
using test::CtaEmulator;

constexpr std::int64_t kEmptyToken = 1;  // every split of this token is empty
constexpr double kEmptyShare = 0.25;     // of the other tokens' splits
constexpr double kFaintShare = 0.1;      // of the splits with rows: a max so low that 2^(m - M)
constexpr float kFaintMax = -200.0f;     // underflows to 0 in fp32 (the merge skips them)

struct Partials {
  std::int64_t tokens = 0;
  int splits = 0;
  std::vector<float> o;    // [T, splits, 16, 512]
  std::vector<float2> ml;  // [T, splits, 16]
};

Partials draw_partials(std::int64_t tokens, int splits, std::uint32_t seed) {
  Partials p{tokens, splits, {}, {}};
  const std::size_t rows = static_cast<std::size_t>(tokens) * splits * dsa::kHeads;
  p.o.resize(rows * dsa::kCkvDim);
  p.ml.resize(rows);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> max_logit(-20.0f, 20.0f), sum(0.5f, 64.0f), unit(0, 1);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t token = static_cast<std::int64_t>(r) / (splits * dsa::kHeads);
    const bool empty = token == kEmptyToken || unit(rng) < kEmptyShare;
    // An empty split's (m, l) is (-inf, 0) on the device; a stray m must not matter either.
    const float m = unit(rng) < kFaintShare ? kFaintMax : max_logit(rng);
    p.ml[r] = empty ? make_float2(unit(rng) < 0.5f ? -INFINITY : 1e3f, 0.0f)
                    : make_float2(m, sum(rng));
    for (int c = 0; c < dsa::kCkvDim; ++c)
      p.o[r * dsa::kCkvDim + c] =
          empty ? std::numeric_limits<float>::quiet_NaN() : value(rng) * p.ml[r].y;
  }
  return p;
}

struct Merged {
  std::vector<__nv_bfloat16> output;  // [T, 16, 512]
  std::vector<float> lse;             // [T, 16]
};

Merged poisoned(std::int64_t tokens) {
  Merged m;
  m.output.resize(static_cast<std::size_t>(tokens) * dsa::kHeads * dsa::kCkvDim);
  m.lse.resize(static_cast<std::size_t>(tokens) * dsa::kHeads);
  std::memset(static_cast<void*>(m.output.data()), 0xff, m.output.size() * sizeof(__nv_bfloat16));
  std::memset(m.lse.data(), 0xff, m.lse.size() * sizeof(float));
  return m;
}

dsa::AttentionArgs merge_args(Merged& m, std::int64_t tokens) {
  dsa::AttentionArgs args{};
  args.output = m.output.data();
  args.lse = m.lse.data();
  args.tokens = tokens;
  return args;
}

dsa::SplitPartials device_view(Partials& p) { return {p.o.data(), p.ml.data()}; }

/// The second kernel's grid: one CTA per (token, head, 256 columns).
Merged run_merge_kernel(Partials& p, CtaEmulator::Order order) {
  Merged m = poisoned(p.tokens);
  const dsa::AttentionArgs args = merge_args(m, p.tokens);
  CtaEmulator emulator(dsa::kMergeThreads, 0, order);
  const std::int64_t ctas = p.tokens * dsa::kHeads * dsa::kMergeCtasPerHead;
  for (std::int64_t cta = 0; cta < ctas; ++cta)
    emulator.run([&](test::EmulatedCta&) { dsa::merge_splits(args, device_view(p), p.splits); },
                 cta);
  return m;
}

/// The in-grid merge: each token's `splits` CTAs of 128 threads (one quad of columns each).
Merged run_grid_merge(Partials& p, CtaEmulator::Order order) {
  Merged m = poisoned(p.tokens);
  const dsa::AttentionArgs args = merge_args(m, p.tokens);
  CtaEmulator emulator(dsa::kCkvDim / 4, 0, order);
  for (std::int64_t token = 0; token < p.tokens; ++token)
    for (int split = 0; split < p.splits; ++split)
      emulator.run([&](test::EmulatedCta&) {
        dsa::merge_heads_in_grid(args, device_view(p), p.splits, token, split);
      });
  return m;
}

void expect_matches_fp64_merge(const Partials& p, const Merged& m) {
  int bad_outputs = 0, bad_lse = 0;
  for (std::int64_t token = 0; token < p.tokens; ++token)
    for (int head = 0; head < dsa::kHeads; ++head) {
      auto row = [&](int s) { return (token * p.splits + s) * dsa::kHeads + head; };
      double M = -INFINITY;
      for (int s = 0; s < p.splits; ++s)
        if (p.ml[row(s)].y > 0) M = std::max(M, static_cast<double>(p.ml[row(s)].x));
      std::vector<double> weight(p.splits, 0.0);  // 2^(m_s - M), 0 for an empty split
      double L = 0.0;
      for (int s = 0; s < p.splits; ++s)
        if (p.ml[row(s)].y > 0) {
          weight[s] = std::exp2(p.ml[row(s)].x - M);
          L += weight[s] * p.ml[row(s)].y;
        }
      const double lse = L > 0 ? M + std::log2(L) : -INFINITY;
      const float got_lse = m.lse[token * dsa::kHeads + head];
      const bool lse_ok = L > 0 ? std::fabs(got_lse - lse) <= 1e-5 * std::max(1.0, std::fabs(lse))
                                : got_lse == -INFINITY;
      bad_lse += !lse_ok;
      for (int c = 0; c < dsa::kCkvDim; ++c) {
        double acc = 0.0;
        for (int s = 0; s < p.splits; ++s)
          if (weight[s] > 0) acc += weight[s] * p.o[row(s) * dsa::kCkvDim + c];
        const double want = L > 0 ? acc / L : 0.0;
        const double got =
            __bfloat162float(m.output[(token * dsa::kHeads + head) * dsa::kCkvDim + c]);
        // bf16 rounds to 8 mantissa bits (2^-9 relative); fp32 sums add a little.
        bad_outputs += !(std::fabs(got - want) <= 4.0e-3 * std::fabs(want) + 1e-6);
      }
    }
  EXPECT_EQ(bad_outputs, 0) << "output elements off the fp64 merge, " << p.splits << " splits";
  EXPECT_EQ(bad_lse, 0) << "LSE values off the fp64 merge, " << p.splits << " splits";
}

void expect_same_bits(const Merged& a, const Merged& b) {
  EXPECT_EQ(std::memcmp(a.output.data(), b.output.data(), a.output.size() * sizeof(a.output[0])),
            0);
  EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(a.lse[0])), 0);
}

/// Split counts up to the build's MAX_SPLITS: one, a few, a partial and a whole O batch, a
/// second batch, and more than one lane's worth (two, five, eight) where MAX_SPLITS allows.
std::vector<int> split_counts() {
  std::vector<int> counts;
  for (int s : {1, 2, 5, dsa::kMergeBatch, dsa::kMergeBatch + 3, 33, 132, dsa::kMaxSplits})
    if (s <= dsa::kMaxSplits && (counts.empty() || counts.back() < s)) counts.push_back(s);
  return counts;
}

TEST(DsaMerge, SecondKernelMatchesTheFp64Merge) {
  for (int splits : split_counts()) {
    Partials p = draw_partials(3, splits, 100 + splits);
    const Merged up = run_merge_kernel(p, CtaEmulator::Order::ascending);
    expect_matches_fp64_merge(p, up);
    expect_same_bits(up, run_merge_kernel(p, CtaEmulator::Order::descending));
  }
}

TEST(DsaMerge, InGridMergeMatchesTheFp64Merge) {
  // Each token's CTA of split s merges heads s, s + splits, ...: fewer splits than heads leave
  // CTAs several heads, more leave some none.
  for (int splits : split_counts()) {
    if (splits < 2) continue;  // one split writes its output itself
    Partials p = draw_partials(2, splits, 200 + splits);
    const Merged up = run_grid_merge(p, CtaEmulator::Order::ascending);
    expect_matches_fp64_merge(p, up);
    expect_same_bits(up, run_grid_merge(p, CtaEmulator::Order::descending));
  }
}

TEST(DsaMerge, BothPlacesAgreeBitForBit) {
  // The fused route and the two-kernel route must give one call the same answer.
  Partials p = draw_partials(2, dsa::kMaxSplits, 7);
  expect_same_bits(run_merge_kernel(p, CtaEmulator::Order::ascending),
                   run_grid_merge(p, CtaEmulator::Order::ascending));
}

}  // namespace
}  // namespace kh
