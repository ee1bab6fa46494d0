// Host (cpu backend) implementation of dsa_topk_indexer_fp8_h64_d128_topk2048_ps64 with one
// planted fault. FAULT=none is a correct indexer: per batch row, score every token of the sequence
// (sum_h w[h] * relu(q[h] . K[j]) with K dequantized from the deep_gemm page layout), keep the
// min(2048, seq_len) best as global slots page * 64 + offset, pad with -1.
//
// FAULT=duplicate_on_ties plants the bug that the official checker's duplicate rule exists for:
// whenever the 2048th and 2049th best scores of a row are exactly equal (a tie across the top-k
// cut), the last output slot repeats the index of the 2047th best instead of holding the 2048th.
// It is deterministic: candidates are ranked by (score descending, position ascending), and the
// trigger is a plain equality test on the ranked scores at positions 2047 and 2048 (0-based).
// The `ties` input variant (keys drawn from a pool of 16 vectors) makes that tie certain on every
// row longer than 2048 tokens.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "kh/abi.h"

#ifndef FAULT
#define FAULT none
#endif
#define KH_STRINGIFY2(x) #x
#define KH_STRINGIFY(x) KH_STRINGIFY2(x)

namespace {

constexpr std::string_view kFault = KH_STRINGIFY(FAULT);
static_assert(kFault == "none" || kFault == "duplicate_on_ties",
              "FAULT must be one of the values listed in candidate.toml");

constexpr int kHeads = 64;
constexpr int kHeadDim = 128;
constexpr int kPageSize = 64;
constexpr int kTopK = 2048;
// deep_gemm page: 64 tokens x 128 fp8 values (token-major), then 64 float32 scales.
constexpr std::int64_t kPageBytes = kPageSize * (kHeadDim + 4);
constexpr std::int64_t kPageScaleOffset = kPageSize * kHeadDim;

float e4m3_to_float(std::uint8_t code) {
  const int sign = code >> 7, exponent = (code >> 3) & 0xf, mantissa = code & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::nanf("");  // e4m3fn has no infinities
  const float magnitude = exponent == 0
                              ? std::ldexp(static_cast<float>(mantissa), -9)
                              : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return sign ? -magnitude : magnitude;
}

bool is_tensor(const DLTensor& t, std::uint8_t code, std::uint8_t bits,
               std::initializer_list<std::int64_t> shape) {
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1) return false;
  if (t.ndim != static_cast<std::int32_t>(shape.size()) || !t.data) return false;
  std::int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != shape.begin()[i]) return false;
    if (t.strides && t.shape[i] != 1 && t.strides[i] != stride) return false;
    stride *= t.shape[i];
  }
  return true;
}

template <typename T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

struct Ranked {
  double score;
  std::int64_t position;  // j: token position in the sequence
};

// Higher score first; equal scores to the lower position, so the output is a function of the
// inputs alone. NaN ranks first, as in torch.topk.
bool ranks_before(const Ranked& x, const Ranked& y) {
  const bool x_nan = std::isnan(x.score), y_nan = std::isnan(y.score);
  if (x_nan != y_nan) return x_nan;
  if (!x_nan && x.score != y.score) return x.score > y.score;
  return x.position < y.position;
}

}  // namespace

KH_EXPORT int kh_dsa_topk_indexer_cpp(const DLTensor* t, int32_t num_tensors, void* /*stream*/,
                                      void* /*workspace*/, uint64_t /*workspace_bytes*/) {
  if (num_tensors != 6 || t[0].ndim != 3 || t[1].ndim != 4 || t[4].ndim != 2)
    return KH_ERROR_INVALID_ARGUMENT;
  const std::int64_t batch = t[0].shape[0], num_pages = t[1].shape[0], max_pages = t[4].shape[1];
  // The cache is declared int8; its bytes are read as uint8, so either signedness is accepted.
  const bool cache_ok = is_tensor(t[1], kDLInt, 8, {num_pages, kPageSize, 1, kHeadDim + 4}) ||
                        is_tensor(t[1], kDLUInt, 8, {num_pages, kPageSize, 1, kHeadDim + 4});
  if (!cache_ok || !is_tensor(t[0], kDLFloat8_e4m3fn, 8, {batch, kHeads, kHeadDim}) ||
      !is_tensor(t[2], kDLFloat, 32, {batch, kHeads}) || !is_tensor(t[3], kDLInt, 32, {batch}) ||
      !is_tensor(t[4], kDLInt, 32, {batch, max_pages}) ||
      !is_tensor(t[5], kDLInt, 32, {batch, kTopK}))
    return KH_ERROR_INVALID_ARGUMENT;

  const auto* q_codes = data_of<const std::uint8_t>(t[0]);
  const auto* cache = data_of<const std::uint8_t>(t[1]);
  const auto* weights = data_of<const float>(t[2]);
  const auto* seq_lens = data_of<const std::int32_t>(t[3]);
  const auto* block_table = data_of<const std::int32_t>(t[4]);
  auto* topk_indices = data_of<std::int32_t>(t[5]);

  std::vector<float> q(kHeads * kHeadDim);
  std::vector<Ranked> ranked;
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int32_t* out_row = topk_indices + b * kTopK;
    std::fill(out_row, out_row + kTopK, -1);
    const std::int64_t len = seq_lens[b];
    if (len < 0 || len > max_pages * kPageSize) return KH_ERROR_INVALID_ARGUMENT;
    const std::int32_t* pages = block_table + b * max_pages;
    for (std::int64_t p = 0; p < (len + kPageSize - 1) / kPageSize; ++p)
      if (pages[p] < 0 || pages[p] >= num_pages) return KH_ERROR_INVALID_ARGUMENT;
    auto slot_of = [&](std::int64_t j) {
      return static_cast<std::int32_t>(pages[j / kPageSize] * kPageSize + j % kPageSize);
    };

    for (int i = 0; i < kHeads * kHeadDim; ++i)
      q[i] = e4m3_to_float(q_codes[b * kHeads * kHeadDim + i]);
    ranked.resize(len);
    for (std::int64_t j = 0; j < len; ++j) {
      const std::int64_t page = pages[j / kPageSize];
      const int offset = static_cast<int>(j % kPageSize);
      const std::uint8_t* codes = cache + page * kPageBytes + offset * kHeadDim;
      float scale;
      std::memcpy(&scale, cache + page * kPageBytes + kPageScaleOffset + offset * 4, sizeof scale);
      float key[kHeadDim];
      for (int d = 0; d < kHeadDim; ++d) key[d] = e4m3_to_float(codes[d]) * scale;  // as the ref
      double score = 0;
      for (int h = 0; h < kHeads; ++h) {
        double dot = 0;
        for (int d = 0; d < kHeadDim; ++d) dot += static_cast<double>(q[h * kHeadDim + d]) * key[d];
        if (dot > 0) score += weights[b * kHeads + h] * dot;
      }
      ranked[j] = {score, j};
    }
    const std::int64_t k = std::min<std::int64_t>(kTopK, len);
    // One element beyond the cut is ranked too, so the fault can see the 2049th best.
    const std::int64_t ranked_count = std::min<std::int64_t>(k + 1, len);
    std::partial_sort(ranked.begin(), ranked.begin() + ranked_count, ranked.end(), ranks_before);
    for (std::int64_t i = 0; i < k; ++i) out_row[i] = slot_of(ranked[i].position);
    if constexpr (kFault == "duplicate_on_ties") {
      if (len > kTopK && ranked[kTopK - 1].score == ranked[kTopK].score)
        out_row[kTopK - 1] = out_row[kTopK - 2];
    }
  }
  return KH_OK;
}
