// How a generated input is drawn, as data: the same recipe is evaluated by the host generator
// and by the device generator (gen/cuda/device_fill.cu), in host/device code compiled without
// fused multiply-adds, so both give the same bits by construction. Operators describe their
// large inputs as recipes (OperatorInputs::recipe); what no recipe covers (index structures,
// small per-workload tensors) is drawn by host code and uploaded.
#pragma once

#include <cmath>
#include <cstdint>

#include "kh/core/element_codec.h"
#include "kh/core/host_device.h"
#include "kh/core/minifloat.h"
#include "kh/gen/official_value.h"
#include "kh/gen/random_stream.h"
#include "kh/ref/dsa_index_layout.h"

namespace kh {

enum class DrawKind : std::int32_t {
  kOfficial,             // the official distribution of the dtype (fib_eval_spec §2.2)
  kScaledNormal,         // scale * N(0,1)
  kClampedScaledNormal,  // clamp(scale * N(0,1), -limit, limit)
  kScaledUniform,        // scale * U(lo, hi)
  kUnitVectors,          // N(0,1) vectors of `group` elements, L2-normalised (in double)
  kIndexerKeyPages,      // the DSA indexer's FP8 paged K cache (see draw_indexer_token)
};

struct DrawRecipe {
  DrawKind kind = DrawKind::kOfficial;
  RandomStream stream{};
  double scale = 1.0;
  double lo = 0.0, hi = 0.0;  // kScaledUniform bounds; kClampedScaledNormal: limit = hi
  std::int64_t group = 1;     // kUnitVectors: vector length
  // kIndexerKeyPages: keys repeat from a pool of `pool` vectors (0: all distinct), and token
  // scales are stretched by near_tie_step * (token % 7) (0: exact).
  std::int64_t pool = 0;
  double near_tie_step = 0.0;

  /// Elements drawn together by one unit of work (a vector, a token's record), 1 if element-wise.
  KH_HD bool is_elementwise() const {
    return kind != DrawKind::kUnitVectors && kind != DrawKind::kIndexerKeyPages;
  }
};

/// Element i of an element-wise recipe, as a double to be stored in the tensor's dtype.
KH_HD double draw_element(const DrawRecipe& r, DType t, std::int64_t i) {
  switch (r.kind) {
    case DrawKind::kScaledNormal:
      return r.scale * r.stream.normal(i);
    case DrawKind::kClampedScaledNormal: {
      const double x = r.scale * r.stream.normal(i);
      return x < -r.hi ? -r.hi : x > r.hi ? r.hi : x;
    }
    case DrawKind::kScaledUniform:
      return r.scale * r.stream.uniform_range(i, r.lo, r.hi);
    default:
      return official_random_value(r.stream, t, i);
  }
}

/// Vector v of a kUnitVectors recipe (group <= kMaxUnitVector elements), stored at v * group.
inline constexpr int kMaxUnitVector = 256;
KH_HD void draw_unit_vector(const DrawRecipe& r, DType t, void* data, std::int64_t v) {
  double x[kMaxUnitVector];
  double norm2 = 0;
  for (std::int64_t d = 0; d < r.group; ++d) {
    x[d] = r.stream.normal(v * r.group + d);
    norm2 += x[d] * x[d];
  }
  const double inv = 1.0 / sqrt(norm2);
  for (std::int64_t d = 0; d < r.group; ++d) store_element(data, t, v * r.group + d, x[d] * inv);
}

/// Token `token` (page * 64 + offset) of the indexer's K cache in deep_gemm's layout, as the
/// official evaluator builds it (fib_eval_spec §2.5): K ~ N(0,1) in bf16, scale = max(|K|,
/// 1e-4) / 448, values e4m3(K * (1 / scale)).
KH_HD void draw_indexer_token(const DrawRecipe& r, std::int64_t tokens, std::uint8_t* bytes,
                              std::int64_t token) {
  constexpr float kFp8Max = 448.0f, kMinAmax = 1e-4f;
  const std::int64_t page = token / dsa::kPageSize;
  const int offset = static_cast<int>(token % dsa::kPageSize);
  // Tie pools draw from stream positions past the last token, shared by every token of the pool.
  const std::int64_t source = r.pool ? r.stream.uniform_int(token, 0, r.pool - 1) + tokens : token;
  float key[dsa::kIndexHeadDim];
  float amax = 0;
  for (int d = 0; d < dsa::kIndexHeadDim; ++d) {
    key[d] = bf16_bits_to_float(
        float_to_bf16_bits(static_cast<float>(r.stream.normal(source * dsa::kIndexHeadDim + d))));
    const float magnitude = key[d] < 0 ? -key[d] : key[d];
    amax = magnitude > amax ? magnitude : amax;
  }
  float scale = (amax > kMinAmax ? amax : kMinAmax) / kFp8Max;
  const float inverse = 1.0f / scale;
  for (int d = 0; d < dsa::kIndexHeadDim; ++d)
    bytes[dsa::key_value_byte(page, offset, d)] = float_to_e4m3(key[d] * inverse);
  if (r.near_tie_step != 0.0)
    scale = static_cast<float>(scale * (1.0 + r.near_tie_step * static_cast<double>(token % 7)));
  const std::uint32_t scale_bits = float_bits(scale);
  for (int b = 0; b < 4; ++b)
    bytes[dsa::key_scale_byte(page, offset) + b] = static_cast<std::uint8_t>(scale_bits >> (8 * b));
}

/// Units of work of a recipe over a tensor of n elements (elements, vectors or tokens).
KH_HD std::int64_t draw_units(const DrawRecipe& r, std::int64_t n) {
  switch (r.kind) {
    case DrawKind::kUnitVectors:
      return n / r.group;
    case DrawKind::kIndexerKeyPages:
      return n / dsa::kPageBytes * dsa::kPageSize;
    default:
      return n;
  }
}

/// Draws unit u of the recipe into a tensor of dtype t and n elements (host or device).
KH_HD void draw_unit(const DrawRecipe& r, DType t, void* data, std::int64_t n, std::int64_t u) {
  switch (r.kind) {
    case DrawKind::kUnitVectors:
      draw_unit_vector(r, t, data, u);
      break;
    case DrawKind::kIndexerKeyPages:
      draw_indexer_token(r, draw_units(r, n), static_cast<std::uint8_t*>(data), u);
      break;
    default:
      store_element(data, t, u, draw_element(r, t, u));
  }
}

}  // namespace kh
