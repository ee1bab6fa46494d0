// GPU reference of moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048: the CPU
// reference (ref/moe_fp8_block_scale.cpp, routing in ref/moe_routing.cpp) as data-parallel
// passes. A route is one (token, selected expert local to this rank) pair; the token's local
// routes are ranked 0..7 by ascending expert, which is the order the CPU reference adds them in.
//
//   1. Routing, one thread per token, in float32 operation for operation as moe_routing.cpp
//      (ranks_before: NaN first, higher first, ties to the lower index; masked experts at
//      float32's lowest). The sigmoid is 1.0f / (1.0f + float(exp(double(-x)))), not expf:
//      host libm's and CUDA's expf differ in the last bit, whereas exp in double rounded to
//      float gives the correctly rounded value on both sides (unless the exact value lies within
//      ~2^-29 of a float rounding boundary), so emulation and device take the same decisions;
//      the CPU reference's glibc expf (<= 0.502 ulp) gives the same bits in all but rare cases,
//      which could change a decision only at a near-tie of scores. Writes per token its local
//      experts (ascending) and their combine weights.
//   2. Route lists without atomics: the routes fall into 256 buckets (rank, local expert). One
//      thread per (bucket, chunk of 256 tokens) counts its chunk; one thread per bucket turns
//      its chunk counts into starts; one thread lays the buckets out (rank-major) as rows of a
//      compact route table and cuts each bucket into tiles of 8 rows; then one thread per
//      (bucket, chunk) writes the token and weight of each of its routes in token order. The
//      layout is deterministic. The host cannot read the counts back, so the later grids are
//      sized by their bounds (8 routes per token at most) and surplus threads return at once.
//   3. Activations dequantized once: A[t, k] = e4m3 * hidden_states_scale[k/128, t] in float32
//      (the reference's rounding), into scratch.
//   4. GEMM1 + SwiGLU, one thread per (tile, intermediate column n): the thread computes rows n
//      (X1) and 2048 + n (X2) of W13 against the tile's up to 8 tokens, so each dequantized
//      weight (e4m3 * block scale in float32, as the reference) is used 8 times and the SwiGLU
//      silu(X2) * X1 stays in the thread. Products accumulate in float within a 128-block and
//      the 56 block sums in double. The intermediate is stored as float [route row, 2048].
//   5. GEMM2 + combine, one launch per rank r = 0..7, one thread per (tile of rank r, h): the
//      dot of each row's intermediate with W2[e, h, :] (same accumulation) times the route
//      weight is added to a float accumulator [token, h]. A token has at most one route of each
//      rank, so within a launch every accumulator element has one writer, and the launches add
//      a token's routes in ascending expert order: deterministic, no atomics.
//   6. The accumulator rounded to bf16, one thread per output element.
//
// Thread order: in 4 and 5 the output column is the fast index, so a warp's 32 threads share
// the tile (its activation/intermediate rows are broadcast loads) and read 32 consecutive weight
// rows, each walked 16 bytes at a time (a 16-byte vector load on the device when the weights
// are 16-byte aligned; rows are multiples of 16 bytes). Cost at seq_len 14107 (workload
// offset 0: 19194 local routes, 1.36 per token): 1.7 TFLOP of float FMAs in ~2500 GEMM1 tiles
// x 2048 threads and as many GEMM2 tiles x 7168 threads (grids of 29 M and 8 x 13 M threads,
// most of which return at once). Scratch: 4 * seq_len * (2 * 7168 + 8 * 2048) bytes plus small
// tables (1.7 GB at 14107 tokens, mostly the intermediate's bound of 8 routes per token).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kh/core/host_device.h"
#include "kh/ref/gpu/element_load.h"
#include "kh/ref/gpu/reference_args.h"

#if defined(__CUDACC__)
#define KH_MOE_UNROLL _Pragma("unroll")
#else
#define KH_MOE_UNROLL
#endif

namespace kh::gpuref {

struct MoeLayout {
  static constexpr int kExperts = 256, kLocal = 32, kTopK = 8;
  static constexpr int kGroups = 8, kKeptGroups = 4, kGroupSize = kExperts / kGroups;
  static constexpr int kHidden = 7168, kInter = 2048, kGemm1Out = 2 * kInter, kBlock = 128;
  static constexpr int kHiddenBlocks = kHidden / kBlock;      // 56
  static constexpr int kInterBlocks = kInter / kBlock;        // 16
  static constexpr int kGemm1OutBlocks = kGemm1Out / kBlock;  // 32
  static constexpr int kBuckets = kTopK * kLocal;             // (rank, local expert), rank-major
  static constexpr int kTile = 8;                             // route rows per GEMM thread
  static constexpr int kVec = 16;                             // weights per load
  static constexpr std::int64_t kChunk = 256;                 // tokens per counting thread
  static constexpr float kLowest = -3.40282346638528859811704183484516925e+38f;
};

// Sixteen consecutive e4m3 weights times their block scale, each product rounded to float32
// as the reference's dequantization. `aligned`: p is 16-byte aligned (device vector load).
KH_HD void load_weights16(const std::uint8_t* p, bool aligned, float scale, float (&w)[16]) {
  std::uint8_t codes[16];
#if defined(__CUDA_ARCH__)
  if (aligned) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    std::memcpy(codes, &v, sizeof codes);
  } else {
    for (int j = 0; j < 16; ++j) codes[j] = p[j];
  }
#else
  (void)aligned;
  for (int j = 0; j < 16; ++j) codes[j] = p[j];
#endif
  KH_MOE_UNROLL
  for (int j = 0; j < 16; ++j) w[j] = load_e4m3(codes, j) * scale;
}

// Sixteen consecutive floats of a scratch row (16-byte aligned: scratch bases are, and the
// offsets read are multiples of 16 floats).
KH_HD void load_floats16(const float* p, float (&x)[16]) {
#if defined(__CUDA_ARCH__)
  KH_MOE_UNROLL
  for (int q = 0; q < 4; ++q) {
    const float4 v = reinterpret_cast<const float4*>(p)[q];
    x[4 * q] = v.x;
    x[4 * q + 1] = v.y;
    x[4 * q + 2] = v.z;
    x[4 * q + 3] = v.w;
  }
#else
  for (int j = 0; j < 16; ++j) x[j] = p[j];
#endif
}

// Pass 1: routing of token t (moe_routing.cpp's route_token), into local_expert[t, 0..7] (the
// token's local experts, ascending, then -1) and weight[t, 0..7].
struct MoeRouteTokens {
  using L = MoeLayout;
  const float* logits;        // [T, 256]
  const std::uint16_t* bias;  // bf16 [256]
  std::int64_t offset;        // local_expert_offset
  float scaling;              // routed_scaling_factor
  std::int32_t* local_expert;
  float* weight;

  KH_HD static bool ranks_before(float x, int ix, float y, int iy) {
    const bool x_nan = x != x, y_nan = y != y;
    if (x_nan != y_nan) return x_nan;
    if (!x_nan && x != y) return x > y;
    return ix < iy;
  }
  // Indices of the k best of v[0, n), best first. ranks_before is a strict total order, so
  // this is what the CPU reference's partial_sort gives.
  KH_HD static void top(const float* v, int n, int k, int* out) {
    for (int r = 0; r < k; ++r) {
      int best = -1;
      for (int i = 0; i < n; ++i) {
        if (r > 0 && !ranks_before(v[out[r - 1]], out[r - 1], v[i], i)) continue;
        if (best < 0 || ranks_before(v[i], i, v[best], best)) best = i;
      }
      out[r] = best;
    }
  }

  KH_HD void operator()(std::int64_t t) const {
    const float* x = logits + t * L::kExperts;
    float s[L::kExperts], biased[L::kExperts];
    for (int e = 0; e < L::kExperts; ++e) {
      s[e] = 1.0f / (1.0f + static_cast<float>(exp(-static_cast<double>(x[e]))));
      biased[e] = s[e] + load_bf16(bias, e);
    }
    // Group score: the sum of the group's two largest biased scores; keep the 4 best groups.
    float group_score[L::kGroups];
    for (int g = 0; g < L::kGroups; ++g) {
      const float* members = biased + g * L::kGroupSize;
      int top2[2];
      top(members, L::kGroupSize, 2, top2);
      group_score[g] = members[top2[0]] + members[top2[1]];
    }
    int kept[L::kKeptGroups];
    top(group_score, L::kGroups, L::kKeptGroups, kept);
    bool keep[L::kGroups] = {};
    for (int g : kept) keep[g] = true;
    for (int e = 0; e < L::kExperts; ++e)
      if (!keep[e / L::kGroupSize]) biased[e] = L::kLowest;
    int chosen[L::kTopK];
    top(biased, L::kExperts, L::kTopK, chosen);
    // Ascending expert order: the weights' normalisation sum and the local route ranks.
    for (int i = 1; i < L::kTopK; ++i)
      for (int j = i; j > 0 && chosen[j - 1] > chosen[j]; --j) {
        const int c = chosen[j];
        chosen[j] = chosen[j - 1];
        chosen[j - 1] = c;
      }
    float sum = 0.0f;
    for (int e : chosen) sum += s[e];
    sum += 1e-20f;
    int n = 0;
    for (int e : chosen) {
      const std::int64_t local = e - offset;
      if (local < 0 || local >= L::kLocal) continue;
      local_expert[t * L::kTopK + n] = static_cast<std::int32_t>(local);
      weight[t * L::kTopK + n] = (s[e] / sum) * scaling;
      ++n;
    }
    for (; n < L::kTopK; ++n) local_expert[t * L::kTopK + n] = -1;
  }
};

// Pass 2a: routes of bucket (rank, local expert) among the tokens of one chunk.
struct MoeCountChunks {
  using L = MoeLayout;
  const std::int32_t* local_expert;  // [T, 8]
  std::int64_t tokens, chunks;
  std::int32_t* chunk_count;  // [256, chunks]

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t bucket = i / chunks, c = i % chunks;
    const std::int64_t rank = bucket / L::kLocal, expert = bucket % L::kLocal;
    const std::int64_t end = (c + 1) * L::kChunk < tokens ? (c + 1) * L::kChunk : tokens;
    std::int32_t n = 0;
    for (std::int64_t t = c * L::kChunk; t < end; ++t)
      if (local_expert[t * L::kTopK + rank] == expert) ++n;
    chunk_count[i] = n;
  }
};

// Pass 2b: per bucket, each chunk's first position within the bucket, and the bucket's size.
struct MoeBucketStarts {
  const std::int32_t* chunk_count;  // [256, chunks]
  std::int64_t chunks;
  std::int32_t* chunk_start;   // [256, chunks]
  std::int32_t* bucket_count;  // [256]

  KH_HD void operator()(std::int64_t bucket) const {
    std::int32_t run = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      chunk_start[bucket * chunks + c] = run;
      run += chunk_count[bucket * chunks + c];
    }
    bucket_count[bucket] = run;
  }
};

// Pass 2c (one thread): buckets laid out rank-major as rows of the route table, and cut into
// tiles of up to 8 rows; entry 256 holds the totals.
struct MoeBucketLayout {
  using L = MoeLayout;
  const std::int32_t* bucket_count;  // [256]
  std::int32_t* bucket_row;          // [257] first route row
  std::int32_t* bucket_tile;         // [257] first tile

  KH_HD void operator()(std::int64_t) const {
    std::int32_t row = 0, tile = 0;
    for (int b = 0; b < L::kBuckets; ++b) {
      bucket_row[b] = row;
      bucket_tile[b] = tile;
      row += bucket_count[b];
      tile += (bucket_count[b] + L::kTile - 1) / L::kTile;
    }
    bucket_row[L::kBuckets] = row;
    bucket_tile[L::kBuckets] = tile;
  }
};

// Pass 2d: the routes of bucket x chunk into their rows, in token order.
struct MoeFillRows {
  using L = MoeLayout;
  const std::int32_t* local_expert;  // [T, 8]
  const float* weight;               // [T, 8]
  const std::int32_t* chunk_start;   // [256, chunks]
  const std::int32_t* bucket_row;    // [257]
  std::int64_t tokens, chunks;
  std::int32_t* row_token;  // [8T]
  float* row_weight;        // [8T]

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t bucket = i / chunks, c = i % chunks;
    const std::int64_t rank = bucket / L::kLocal, expert = bucket % L::kLocal;
    const std::int64_t end = (c + 1) * L::kChunk < tokens ? (c + 1) * L::kChunk : tokens;
    std::int64_t row = static_cast<std::int64_t>(bucket_row[bucket]) + chunk_start[i];
    for (std::int64_t t = c * L::kChunk; t < end; ++t)
      if (local_expert[t * L::kTopK + rank] == expert) {
        row_token[row] = static_cast<std::int32_t>(t);
        row_weight[row] = weight[t * L::kTopK + rank];
        ++row;
      }
  }
};

// Pass 3: A = e4m3 * hidden_states_scale[k/128, t] (the scale is stored transposed), float32.
struct MoeDequantizeActivations {
  using L = MoeLayout;
  const std::uint8_t* hidden;  // [T, 7168]
  const float* hidden_scale;   // [56, T]
  std::int64_t tokens;
  float* act;  // [T, 7168]

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t t = i / L::kHidden, k = i % L::kHidden;
    act[i] = load_e4m3(hidden, i) * hidden_scale[(k / L::kBlock) * tokens + t];
  }
};

// A tile of up to 8 route rows of one bucket.
struct MoeTile {
  int expert;         // local
  std::int64_t row0;  // first route row
  int rows;           // 1..8
};

struct MoeTiles {
  using L = MoeLayout;
  const std::int32_t* bucket_row;    // [257]
  const std::int32_t* bucket_count;  // [256]
  const std::int32_t* bucket_tile;   // [257]

  // Tile j, which must lie in the tiles of buckets [lo, hi): binary search for the bucket b
  // with bucket_tile[b] <= j < bucket_tile[b + 1] (empty buckets have no tiles).
  KH_HD MoeTile find(std::int64_t j, int lo, int hi) const {
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (bucket_tile[mid] <= j)
        lo = mid;
      else
        hi = mid;
    }
    const std::int64_t first = (j - bucket_tile[lo]) * L::kTile;
    const std::int64_t left = bucket_count[lo] - first;
    return {lo % L::kLocal, bucket_row[lo] + first,
            static_cast<int>(left < L::kTile ? left : L::kTile)};
  }
};

// Pass 4: GEMM1 rows n and 2048 + n of W13 for one tile, then SwiGLU silu(X2) * X1.
struct MoeGemm1SwiGlu {
  using L = MoeLayout;
  MoeTiles tiles;
  const std::uint8_t* w13;  // [32, 4096, 7168]
  const float* w13_scale;   // [32, 32, 56]
  bool w13_aligned;
  const float* act;  // [T, 7168]
  const std::int32_t* row_token;
  float* inter;  // [8T, 2048]

  KH_HD void operator()(std::int64_t i) const {
    const int n = static_cast<int>(i % L::kInter);
    const std::int64_t j = i / L::kInter;
    if (j >= tiles.bucket_tile[L::kBuckets]) return;
    const MoeTile tile = tiles.find(j, 0, L::kBuckets);
    const float* a[L::kTile];
    KH_MOE_UNROLL
    for (int m = 0; m < L::kTile; ++m)  // rows past the tile's end repeat its last (unused)
      a[m] = act +
             static_cast<std::int64_t>(row_token[tile.row0 + (m < tile.rows ? m : tile.rows - 1)]) *
                 L::kHidden;
    const std::int64_t x1_row = static_cast<std::int64_t>(tile.expert) * L::kGemm1Out + n;
    const std::int64_t x2_row = x1_row + L::kInter;
    const std::uint8_t* w1 = w13 + x1_row * L::kHidden;
    const std::uint8_t* w2 = w13 + x2_row * L::kHidden;
    const float* s1 =
        w13_scale + (tile.expert * L::kGemm1OutBlocks + (n / L::kBlock)) * L::kHiddenBlocks;
    const float* s2 =
        w13_scale +
        (tile.expert * L::kGemm1OutBlocks + ((n + L::kInter) / L::kBlock)) * L::kHiddenBlocks;
    double x1[L::kTile] = {}, x2[L::kTile] = {};
    for (int kb = 0; kb < L::kHiddenBlocks; ++kb) {
      float p1[L::kTile] = {}, p2[L::kTile] = {};
      for (int k = kb * L::kBlock; k < (kb + 1) * L::kBlock; k += L::kVec) {
        float v1[L::kVec], v2[L::kVec];
        load_weights16(w1 + k, w13_aligned, s1[kb], v1);
        load_weights16(w2 + k, w13_aligned, s2[kb], v2);
        KH_MOE_UNROLL
        for (int m = 0; m < L::kTile; ++m) {
          if (m >= tile.rows) continue;
          float x[L::kVec];
          load_floats16(a[m] + k, x);
          KH_MOE_UNROLL
          for (int d = 0; d < L::kVec; ++d) {
            p1[m] += x[d] * v1[d];
            p2[m] += x[d] * v2[d];
          }
        }
      }
      KH_MOE_UNROLL
      for (int m = 0; m < L::kTile; ++m) {
        x1[m] += p1[m];
        x2[m] += p2[m];
      }
    }
    KH_MOE_UNROLL
    for (int m = 0; m < L::kTile; ++m)
      if (m < tile.rows)
        inter[(tile.row0 + m) * L::kInter + n] =
            static_cast<float>(x2[m] / (1.0 + exp(-x2[m])) * x1[m]);
  }
};

// Pass 5 (rank r): GEMM2 row h of W2 for one tile of rank-r routes, weighted into the tokens'
// accumulators (each token has at most one rank-r route: one writer per element).
struct MoeGemm2Combine {
  using L = MoeLayout;
  MoeTiles tiles;
  int rank;
  const std::uint8_t* w2;  // [32, 7168, 2048]
  const float* w2_scale;   // [32, 56, 16]
  bool w2_aligned;
  const float* inter;  // [8T, 2048]
  const std::int32_t* row_token;
  const float* row_weight;
  float* acc;  // [T, 7168]

  KH_HD void operator()(std::int64_t i) const {
    const int h = static_cast<int>(i % L::kHidden);
    const int lo = rank * L::kLocal, hi = lo + L::kLocal;
    const std::int64_t j = tiles.bucket_tile[lo] + i / L::kHidden;
    if (j >= tiles.bucket_tile[hi]) return;
    const MoeTile tile = tiles.find(j, lo, hi);
    const float* c[L::kTile];
    KH_MOE_UNROLL
    for (int m = 0; m < L::kTile; ++m)
      c[m] = inter + (tile.row0 + (m < tile.rows ? m : tile.rows - 1)) * L::kInter;
    const std::int64_t row = static_cast<std::int64_t>(tile.expert) * L::kHidden + h;
    const std::uint8_t* w = w2 + row * L::kInter;
    const float* s = w2_scale + (tile.expert * L::kHiddenBlocks + h / L::kBlock) * L::kInterBlocks;
    double y[L::kTile] = {};
    for (int ib = 0; ib < L::kInterBlocks; ++ib) {
      float p[L::kTile] = {};
      for (int k = ib * L::kBlock; k < (ib + 1) * L::kBlock; k += L::kVec) {
        float v[L::kVec];
        load_weights16(w + k, w2_aligned, s[ib], v);
        KH_MOE_UNROLL
        for (int m = 0; m < L::kTile; ++m) {
          if (m >= tile.rows) continue;
          float x[L::kVec];
          load_floats16(c[m] + k, x);
          KH_MOE_UNROLL
          for (int d = 0; d < L::kVec; ++d) p[m] += x[d] * v[d];
        }
      }
      KH_MOE_UNROLL
      for (int m = 0; m < L::kTile; ++m) y[m] += p[m];
    }
    KH_MOE_UNROLL
    for (int m = 0; m < L::kTile; ++m)
      if (m < tile.rows) {
        const std::int64_t t = row_token[tile.row0 + m];
        acc[t * L::kHidden + h] += static_cast<float>(row_weight[tile.row0 + m] * y[m]);
      }
  }
};

// Pass 6: the output in bf16.
struct MoeStoreOutput {
  const float* acc;
  std::uint16_t* output;
  KH_HD void operator()(std::int64_t i) const { store_bf16(output, i, acc[i]); }
};

// Zeroed scratch for `count` elements of T.
template <class T, class Exec>
T* moe_scratch(Exec& exec, std::int64_t count) {
  return static_cast<T*>(exec.scratch(static_cast<std::size_t>(count) * sizeof(T)));
}

template <class Exec>
void moe_fp8_block_scale_reference(Exec& exec, const ReferenceArgs& args) {
  using L = MoeLayout;
  const std::int64_t tokens = args.axis("seq_len");
  const std::int64_t chunks = (tokens + L::kChunk - 1) / L::kChunk;
  const std::int64_t max_rows = tokens * L::kTopK;  // route rows: 8 local routes per token at most
  auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };

  MoeRouteTokens route{};
  route.logits = args.in<float>("routing_logits");
  route.bias = args.in<std::uint16_t>("routing_bias");
  route.offset = static_cast<std::int64_t>(args.scalar("local_expert_offset", 0.0));
  route.scaling = static_cast<float>(args.scalar("routed_scaling_factor", 2.5));
  route.local_expert = moe_scratch<std::int32_t>(exec, max_rows);
  route.weight = moe_scratch<float>(exec, max_rows);
  exec.for_each(tokens, route);

  auto* chunk_count = moe_scratch<std::int32_t>(exec, L::kBuckets * chunks);
  auto* chunk_start = moe_scratch<std::int32_t>(exec, L::kBuckets * chunks);
  auto* bucket_row = moe_scratch<std::int32_t>(exec, L::kBuckets + 1);
  auto* bucket_count = moe_scratch<std::int32_t>(exec, L::kBuckets);
  auto* bucket_tile = moe_scratch<std::int32_t>(exec, L::kBuckets + 1);
  const MoeTiles tiles{bucket_row, bucket_count, bucket_tile};
  auto* row_token = moe_scratch<std::int32_t>(exec, max_rows);
  auto* row_weight = moe_scratch<float>(exec, max_rows);
  exec.for_each(L::kBuckets * chunks,
                MoeCountChunks{route.local_expert, tokens, chunks, chunk_count});
  exec.for_each(L::kBuckets, MoeBucketStarts{chunk_count, chunks, chunk_start, bucket_count});
  exec.for_each(1, MoeBucketLayout{bucket_count, bucket_row, bucket_tile});
  exec.for_each(L::kBuckets * chunks,
                MoeFillRows{route.local_expert, route.weight, chunk_start, bucket_row, tokens,
                            chunks, row_token, row_weight});

  float* act = moe_scratch<float>(exec, tokens * L::kHidden);
  exec.for_each(tokens * L::kHidden,
                MoeDequantizeActivations{args.in<std::uint8_t>("hidden_states"),
                                         args.in<float>("hidden_states_scale"), tokens, act});

  // Grids by the bound on tiles: ceil(n / 8) <= n / 8 + 7/8 tiles for a bucket of n routes;
  // 8T routes in 256 buckets, and at most T routes of one rank in its 32 buckets.
  MoeGemm1SwiGlu gemm1{};
  gemm1.tiles = tiles;
  gemm1.w13 = args.in<std::uint8_t>("gemm1_weights");
  gemm1.w13_scale = args.in<float>("gemm1_weights_scale");
  gemm1.w13_aligned = aligned16(gemm1.w13);
  gemm1.act = act;
  gemm1.row_token = row_token;
  gemm1.inter = moe_scratch<float>(exec, max_rows * L::kInter);
  exec.for_each((max_rows / L::kTile + L::kBuckets) * L::kInter, gemm1);

  MoeGemm2Combine gemm2{};
  gemm2.tiles = tiles;
  gemm2.w2 = args.in<std::uint8_t>("gemm2_weights");
  gemm2.w2_scale = args.in<float>("gemm2_weights_scale");
  gemm2.w2_aligned = aligned16(gemm2.w2);
  gemm2.inter = gemm1.inter;
  gemm2.row_token = row_token;
  gemm2.row_weight = row_weight;
  gemm2.acc = moe_scratch<float>(exec, tokens * L::kHidden);
  for (int rank = 0; rank < L::kTopK; ++rank) {
    gemm2.rank = rank;
    exec.for_each((tokens / L::kTile + L::kLocal) * L::kHidden, gemm2);
  }

  exec.for_each(tokens * L::kHidden, MoeStoreOutput{gemm2.acc, args.out<std::uint16_t>("output")});
}

}  // namespace kh::gpuref

#undef KH_MOE_UNROLL
