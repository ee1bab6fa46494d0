// GPU reference of dsa_topk_indexer_*: the CPU reference (ref/dsa_topk_indexer.cpp) as four
// data-parallel passes, since a top-k needs no cross-thread cooperation when every candidate
// computes its own rank.
//
//   1. one thread per (row, q element) decodes q from e4m3 into scratch (exact; the CPU reference
//      also decodes q once per row).
//   2. one thread per (row b, position j < max_num_pages*64) scores token j of sequence b, with
//      kh::dsa::index_score's arithmetic operation for operation: key[d] = e4m3 * scale in
//      float32, q.key per head accumulated in double, score = sum_h w[h] * dot_h over the heads
//      with dot_h > 0, in double. Token j lives at slot block_table[b, j/64]*64 + j%64 of the
//      paged deep_gemm cache, each page being 64x128 FP8 bytes then 64 float32 scales (so byte
//      132*i of a page is NOT token i's record; the layout is restated below in C++17 because
//      dsa_index_cache.h is not device code). Positions j >= seq_lens[b] are never read again.
//   3. one thread per (row, position j < seq_len) computes the rank of its token in the order
//      the CPU reference sorts by (ranks_before: NaN first, then score descending, ties to the
//      lower position) by counting the row's tokens that rank before it. The order is strict and
//      total, so the ranks are a permutation of [0, seq_len) and rank r < 2048 owns output slot
//      r alone: the output is the CPU reference's exactly, order included. The O(seq_len^2)
//      count is cheap at the official sizes (<= 31 rows of <= 5824 tokens).
//   4. one thread per output slot (b, r) with r >= min(2048, seq_len) writes the padding -1.
//
// What is written is, as in the definition, the global slot page*64 + offset of the token, not
// its position in the sequence. On the device the double products w[h] * dot_h use __dmul_rn so
// that nvcc does not fuse them into the following additions (q*key is exact in double, so those
// fused or not give the same bits): the device scores are the CPU reference's bit for bit.
//
// The CPU reference rejects a seq_len outside [0, max_num_pages*64] and a used block-table
// entry outside [0, num_pages); a device reference cannot fail, so here seq_len is clamped to
// that range and a token on such a page scores NaN (its slot is still output) without reading
// memory outside the cache: wrong inputs give visible garbage, never an out-of-bounds access.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kh/core/host_device.h"
#include "kh/ref/gpu/element_load.h"
#include "kh/ref/gpu/reference_args.h"

namespace kh::gpuref {

struct DsaIndexerLayout {
  static constexpr int kPageSize = 64, kHeads = 64, kHeadDim = 128, kTopK = 2048;
  static constexpr std::int64_t kPageBytes = kPageSize * (kHeadDim + 4);
  static constexpr std::int64_t kScaleOffset = kPageSize * kHeadDim;  // within a page
  static constexpr std::int32_t kPadding = -1;

  // Byte offset of token `offset`'s FP8 value 0 in page `page`, and of its float32 scale.
  KH_HD static std::int64_t value_byte(std::int64_t page, int offset) {
    return page * kPageBytes + static_cast<std::int64_t>(offset) * kHeadDim;
  }
  KH_HD static std::int64_t scale_byte(std::int64_t page, int offset) {
    return page * kPageBytes + kScaleOffset + static_cast<std::int64_t>(offset) * 4;
  }

  // seq_lens[b] clamped to [0, positions] (the CPU reference fails outside it).
  KH_HD static std::int64_t clamped_len(const std::int32_t* seq_lens, std::int64_t b,
                                        std::int64_t positions) {
    const std::int64_t len = seq_lens[b];
    return len < 0 ? 0 : len > positions ? positions : len;
  }

  KH_HD static bool is_nan(double x) { return x != x; }
  // A product that nvcc may not contract into a fused multiply-add.
  KH_HD static double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
  }
  KH_HD static float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
  }
};

// Pass 1: q decoded to float (exact), [batch, 64, 128].
struct DsaIndexerDecodeQ {
  const std::uint8_t* q_fp8;
  float* q;
  KH_HD void operator()(std::int64_t i) const { q[i] = load_e4m3(q_fp8, i); }
};

// Pass 2: the score of token j of row b, into scores[b * positions + j].
struct DsaIndexerScore {
  using L = DsaIndexerLayout;
  const float* q;                   // decoded, [batch, 64, 128]
  const std::uint8_t* cache;        // [num_pages] deep_gemm pages
  const float* weights;             // [batch, 64]
  const std::int32_t* seq_lens;     // [batch]
  const std::int32_t* block_table;  // [batch, max_pages]
  std::int64_t max_pages, num_pages;
  std::int64_t positions;  // max_pages * 64
  double* scores;          // [batch, positions]

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t b = i / positions, j = i % positions;
    if (j >= L::clamped_len(seq_lens, b, positions)) return;
    const std::int64_t page = block_table[b * max_pages + j / L::kPageSize];
    const int offset = static_cast<int>(j % L::kPageSize);
    if (page < 0 || page >= num_pages) {  // rejected by the CPU reference; never read it
      std::uint64_t nan_bits = 0x7ff8000000000000ull;
      std::memcpy(&scores[i], &nan_bits, sizeof nan_bits);
      return;
    }
    float scale;
    std::memcpy(&scale, cache + L::scale_byte(page, offset), sizeof scale);
    const std::uint8_t* codes = cache + L::value_byte(page, offset);
    float key[L::kHeadDim];
    for (int d = 0; d < L::kHeadDim; ++d) key[d] = L::mul(load_e4m3(codes, d), scale);
    const float* qb = q + b * L::kHeads * L::kHeadDim;
    const float* w = weights + b * L::kHeads;
    double score = 0;
    for (int h = 0; h < L::kHeads; ++h) {
      double dot = 0;
      for (int d = 0; d < L::kHeadDim; ++d)
        dot += static_cast<double>(qb[h * L::kHeadDim + d]) * key[d];  // exact product
      if (dot > 0) score += L::mul(static_cast<double>(w[h]), dot);
    }
    scores[i] = score;
  }
};

// Pass 3: token j of row b goes to output slot rank(j) when that is < 2048.
struct DsaIndexerRank {
  using L = DsaIndexerLayout;
  const double* scores;             // [batch, positions]
  const std::int32_t* seq_lens;     // [batch]
  const std::int32_t* block_table;  // [batch, max_pages]
  std::int64_t max_pages, positions;
  std::int32_t* topk_indices;  // [batch, 2048]

  // The CPU reference's ranks_before: NaN first, then descending score, ties to lower position.
  KH_HD static bool ranks_before(double x, std::int64_t x_pos, double y, std::int64_t y_pos) {
    const bool x_nan = L::is_nan(x), y_nan = L::is_nan(y);
    if (x_nan != y_nan) return x_nan;
    if (!x_nan && x != y) return x > y;
    return x_pos < y_pos;
  }

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t b = i / positions, j = i % positions;
    const std::int64_t len = L::clamped_len(seq_lens, b, positions);
    if (j >= len) return;
    const double* row = scores + b * positions;
    const double mine = row[j];
    std::int64_t rank = 0;
    for (std::int64_t t = 0; t < len && rank < L::kTopK; ++t)
      rank += ranks_before(row[t], t, mine, j) ? 1 : 0;
    if (rank >= L::kTopK) return;
    const std::int64_t page = block_table[b * max_pages + j / L::kPageSize];
    topk_indices[b * L::kTopK + rank] =
        static_cast<std::int32_t>(page * L::kPageSize + j % L::kPageSize);
  }
};

// Pass 4: -1 in the output slots beyond min(2048, seq_len).
struct DsaIndexerPad {
  using L = DsaIndexerLayout;
  const std::int32_t* seq_lens;
  std::int64_t positions;
  std::int32_t* topk_indices;  // [batch, 2048]

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t b = i / L::kTopK, r = i % L::kTopK;
    if (r >= L::clamped_len(seq_lens, b, positions)) topk_indices[i] = L::kPadding;
  }
};

template <class Exec>
void dsa_topk_indexer_reference(Exec& exec, const ReferenceArgs& args) {
  using L = DsaIndexerLayout;
  const std::int64_t batch = args.axis("batch_size");
  const std::int64_t max_pages = args.axis("max_num_pages");
  const std::int64_t positions = max_pages * L::kPageSize;
  const std::int32_t* seq_lens = args.in<std::int32_t>("seq_lens");
  const std::int32_t* block_table = args.in<std::int32_t>("block_table");
  std::int32_t* topk_indices = args.out<std::int32_t>("topk_indices");

  const std::int64_t q_elements = batch * L::kHeads * L::kHeadDim;
  auto* q = static_cast<float*>(exec.scratch(static_cast<std::size_t>(q_elements) * sizeof(float)));
  exec.for_each(q_elements, DsaIndexerDecodeQ{args.in<std::uint8_t>("q_index_fp8"), q});

  auto* scores = static_cast<double*>(
      exec.scratch(static_cast<std::size_t>(batch * positions) * sizeof(double)));
  DsaIndexerScore score{};
  score.q = q;
  score.cache = args.in<std::uint8_t>("k_index_cache_fp8");
  score.weights = args.in<float>("weights");
  score.seq_lens = seq_lens;
  score.block_table = block_table;
  score.max_pages = max_pages;
  score.num_pages = args.axis("num_pages");
  score.positions = positions;
  score.scores = scores;
  exec.for_each(batch * positions, score);

  exec.for_each(batch * positions,
                DsaIndexerRank{scores, seq_lens, block_table, max_pages, positions, topk_indices});
  exec.for_each(batch * L::kTopK, DsaIndexerPad{seq_lens, positions, topk_indices});
}

}  // namespace kh::gpuref
