#include "kh/ref/dsa_index_cache.h"

#include <cstring>

#include "kh/core/minifloat.h"

namespace kh::dsa {

float key_scale(const HostTensor& cache, std::int64_t page, int offset) {
  float s;
  std::memcpy(&s, cache.bytes() + key_scale_byte(page, offset), sizeof s);
  return s;
}

float key_value(const HostTensor& cache, std::int64_t page, int offset, int d) {
  const auto code = static_cast<std::uint8_t>(cache.bytes()[key_value_byte(page, offset, d)]);
  return e4m3_to_float(code) * key_scale(cache, page, offset);
}

double index_score(const HostTensor& q_fp8, const HostTensor& weights, const HostTensor& cache,
                   std::int64_t b, std::int64_t slot) {
  const std::int64_t page = slot / kPageSize;
  const int offset = static_cast<int>(slot % kPageSize);
  float key[kIndexHeadDim];
  for (int d = 0; d < kIndexHeadDim; ++d) key[d] = key_value(cache, page, offset, d);
  const auto* q = q_fp8.data<std::uint8_t>() + b * kIndexHeads * kIndexHeadDim;
  const float* w = weights.data<float>() + b * kIndexHeads;
  double score = 0;
  for (int h = 0; h < kIndexHeads; ++h) {
    double dot = 0;
    for (int d = 0; d < kIndexHeadDim; ++d)
      dot += static_cast<double>(e4m3_to_float(q[h * kIndexHeadDim + d])) * key[d];
    if (dot > 0) score += static_cast<double>(w[h]) * dot;
  }
  return score;
}

}  // namespace kh::dsa
