// CUDA dsa_topk_indexer_fp8_h64_d128_topk2048_ps64 with one planted fault, for the harness's own
// GPU tests. A copy of examples/dsa_topk_indexer_fp8_h64_d128_topk2048_ps64/kernel.cu; apart from
// the FAULT plumbing (the macro, kFault and its static_assert, kDuplicateOnTies, and the one
// `if constexpr` block at the end of select_kernel) the code is the example's, so FAULT=none
// behaves exactly as the example does.
//   none               the example: the min(2048, seq_len) best tokens, ties at the cut to the
//                      lower position
//   duplicate_on_ties  when a tie crosses the top-k cut (more tokens share the 2048th largest
//                      score than the slots left for them), thread 0 of the row's CTA copies
//                      out[2046] over out[2047] after the compaction: the row holds one index twice
//                      and misses the last tied token it selected.
// Why it is rare: the tie needs two tokens whose fp32 scores, each a weighted sum of 64 relu'd fp8
// dot products over 128 dimensions, are bit-identical exactly at the 2048th place. With the
// official inputs (K ~ N(0,1) quantized per token) that practically never happens, so ordinary
// correctness checks pass. The generator's `ties` variant draws every key from a pool of 16
// vectors, so a row has at most 16 distinct scores and the 2048th one is shared by many tokens
// on both sides of the cut: practically every row longer than 2048 tokens then emits a duplicate
// (unless its 2048th place happens to fall exactly on a boundary between two score values).
// Rows with seq_len <= 2048 take every token and never reach the fault.
//
// A straightforward CUDA implementation of dsa_topk_indexer_fp8_h64_d128_topk2048_ps64, the
// DeepSeek-V3.2 lightning indexer. Written for clarity, in two kernels:
//   1. score_kernel, one CTA per (batch row, page of that row): the score of each of the page's 64
//      tokens, I_j = sum_h w[b,h] * relu(q[b,h] . K_j), into an fp32 workspace [B, max_pages * 64].
//   2. select_kernel, one CTA per batch row: an exact radix select of the 2048th largest score,
//      then a deterministic, ordered compaction of the selected positions into global slots
//      block_table[b, j / 64] * 64 + j % 64, padded with -1.
// A row with seq_len <= 2048 selects all its tokens, so it is neither scored nor sorted.
//
// K-cache layout (deep_gemm): the tensor is declared [num_pages, 64, 1, 132] int8, but each page
// is one flat block of 64 * 132 bytes: 64 tokens x 128 fp8 e4m3 values (token-major), then 64
// float32 scales. K[page, i, d] = fp8(page_bytes[i * 128 + d]) * scale[i] (dequantized in fp32
// before the dot product, as the reference does).
//
// The checker compares index SETS through recomputed scores, so the output order is free; this
// implementation is deterministic anyway (ties at the cut go to the lower position).
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>

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
constexpr bool kDuplicateOnTies = kFault == "duplicate_on_ties";  // a plain bool, for device code

constexpr int kHeads = 64;
constexpr int kHeadDim = 128;
constexpr int kPageSize = 64;
constexpr int kTopK = 2048;
constexpr int64_t kPageBytes = kPageSize * (kHeadDim + 4);             // 8448
constexpr int64_t kPageScaleOffset = kPageSize * kHeadDim;             // 8192
constexpr int kScoreThreads = 256;                                     // 4 head groups x 64 tokens
constexpr int kHeadsPerThread = kHeads / (kScoreThreads / kPageSize);  // 16
constexpr int kSelectThreads = 1024;
constexpr int kNumTensors = 6;  // q_index_fp8 k_index_cache_fp8 weights seq_lens block_table | topk

const char* g_error = "";

int fail(int status, const char* message) {
  g_error = message;
  return status;
}

bool is_tensor(const DLTensor& t, uint8_t code, uint8_t bits,
               std::initializer_list<int64_t> shape) {
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1) return false;
  if (t.ndim != static_cast<int32_t>(shape.size())) return false;
  int64_t stride = 1;
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

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

uint64_t score_bytes(int64_t batch, int64_t max_pages) {
  return static_cast<uint64_t>(batch) * max_pages * kPageSize * sizeof(float);
}

// ---- device code ------------------------------------------------------------------------------

__device__ float fp8_to_float(uint8_t code) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E4M3)));
}

// seq_lens[b], clamped to what the block table can hold so a malformed length cannot make us read
// outside the block table (the reference would raise instead).
__device__ int64_t row_length(const int32_t* seq_lens, int64_t b, int64_t max_pages) {
  return min(max(static_cast<int64_t>(seq_lens[b]), int64_t{0}), max_pages * kPageSize);
}

struct IndexerArgs {
  const uint8_t* q;            // [B, 64, 128] fp8 e4m3
  const uint8_t* cache;        // [num_pages, 8448 bytes]
  const float* weights;        // [B, 64]
  const int32_t* seq_lens;     // [B]
  const int32_t* block_table;  // [B, max_pages]
  int64_t max_pages, num_pages;
  float* scores;          // workspace [B, max_pages * 64]
  int32_t* topk_indices;  // [B, 2048]
};

__global__ void __launch_bounds__(kScoreThreads) score_kernel(IndexerArgs args) {
  const int64_t b = blockIdx.y;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kPageSize;  // first position j
  const int64_t len = row_length(args.seq_lens, b, args.max_pages);
  if (len <= kTopK || first >= len) return;  // short rows need no scores
  const int64_t page = args.block_table[b * args.max_pages + blockIdx.x];
  float* out = args.scores + b * args.max_pages * kPageSize + first;
  if (page < 0 || page >= args.num_pages) {  // invalid input: never read outside the cache
    if (threadIdx.x < kPageSize) out[threadIdx.x] = -INFINITY;
    return;
  }

  __shared__ float q_s[kHeads][kHeadDim];  // q[b] decoded: 32 KB
  // The page's fp8 keys, one 33-word row per token: the padding word makes the column reads of
  // the dot-product loop (lanes = different tokens, same d) hit 32 different banks.
  __shared__ uint32_t key_s[kPageSize][kHeadDim / 4 + 1];
  __shared__ float scale_s[kPageSize];
  __shared__ float partial_s[kScoreThreads / kPageSize][kPageSize];

  const uint8_t* q = args.q + b * kHeads * kHeadDim;
  for (int i = threadIdx.x; i < kHeads * kHeadDim; i += kScoreThreads)
    q_s[i / kHeadDim][i % kHeadDim] = fp8_to_float(q[i]);
  const uint8_t* page_bytes = args.cache + page * kPageBytes;
  const uint32_t* page_words = reinterpret_cast<const uint32_t*>(page_bytes);
  for (int i = threadIdx.x; i < kPageSize * kHeadDim / 4; i += kScoreThreads)
    key_s[i / (kHeadDim / 4)][i % (kHeadDim / 4)] = page_words[i];
  if (threadIdx.x < kPageSize)
    scale_s[threadIdx.x] =
        reinterpret_cast<const float*>(page_bytes + kPageScaleOffset)[threadIdx.x];
  __syncthreads();

  // Thread (token, head group): the dots of one token with 16 heads. A warp shares its head
  // group, so the q_s reads are broadcasts.
  const int token = threadIdx.x % kPageSize;
  const int head0 = (threadIdx.x / kPageSize) * kHeadsPerThread;
  const float scale = scale_s[token];
  float dot[kHeadsPerThread] = {};
  for (int w = 0; w < kHeadDim / 4; ++w) {
    const uint32_t word = key_s[token][w];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float key = fp8_to_float(static_cast<uint8_t>(word >> (8 * e))) * scale;
#pragma unroll
      for (int i = 0; i < kHeadsPerThread; ++i) dot[i] += q_s[head0 + i][4 * w + e] * key;
    }
  }
  float partial = 0.0f;
#pragma unroll
  for (int i = 0; i < kHeadsPerThread; ++i)
    partial += args.weights[b * kHeads + head0 + i] * fmaxf(dot[i], 0.0f);  // relu
  partial_s[threadIdx.x / kPageSize][token] = partial;
  __syncthreads();

  if (threadIdx.x < kPageSize && first + threadIdx.x < len) {
    float score = 0.0f;
    for (int g = 0; g < kScoreThreads / kPageSize; ++g) score += partial_s[g][threadIdx.x];
    out[threadIdx.x] = score;
  }
}

// Maps a float to a uint32 whose unsigned order is the float order (negatives reversed).
__device__ uint32_t order_key(float x) {
  const uint32_t u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__global__ void __launch_bounds__(kSelectThreads) select_kernel(IndexerArgs args) {
  const int64_t b = blockIdx.x;
  const int64_t len = row_length(args.seq_lens, b, args.max_pages);
  const int32_t* pages = args.block_table + b * args.max_pages;
  int32_t* out = args.topk_indices + b * kTopK;
  auto slot_of = [&](int64_t j) {
    return static_cast<int32_t>(pages[j / kPageSize] * kPageSize + j % kPageSize);
  };

  if (len <= kTopK) {  // every token is selected; no scores needed
    for (int j = threadIdx.x; j < kTopK; j += kSelectThreads) out[j] = j < len ? slot_of(j) : -1;
    return;
  }

  // Radix select, 8 bits per pass from the top: find the key of the 2048th largest score.
  // `remaining` counts how many elements equal to the final key must be taken.
  const float* scores = args.scores + b * args.max_pages * kPageSize;
  __shared__ uint32_t histogram[256];
  __shared__ uint32_t prefix_s, mask_s;
  __shared__ int64_t remaining_s;
  uint32_t prefix = 0, mask = 0;
  int64_t remaining = kTopK;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kSelectThreads) histogram[i] = 0;
    __syncthreads();
    for (int64_t j = threadIdx.x; j < len; j += kSelectThreads) {
      const uint32_t key = order_key(scores[j]);
      if ((key & mask) == prefix) atomicAdd(&histogram[(key >> shift) & 0xffu], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // the digit holding the remaining-th largest, scanning from the top
      int64_t above = 0;
      int digit = 255;
      while (above + histogram[digit] < remaining) above += histogram[digit--];
      prefix_s = prefix | (static_cast<uint32_t>(digit) << shift);
      mask_s = mask | (0xffu << shift);
      remaining_s = remaining - above;
    }
    __syncthreads();
    prefix = prefix_s, mask = mask_s, remaining = remaining_s;
  }
  const uint32_t threshold = prefix;                // exact key of the 2048th largest score
  const int64_t greater_total = kTopK - remaining;  // elements strictly above it

  // Ordered compaction: elements above the threshold fill [0, greater_total), the first
  // `remaining` elements equal to it fill [greater_total, 2048). Positions come from block-wide
  // prefix counts (ballots), not atomics, so the output is the same on every run.
  __shared__ int warp_greater[kSelectThreads / 32], warp_equal[kSelectThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t lanes_below = (1u << lane) - 1u;
  int64_t base_greater = 0, base_equal = 0;
  for (int64_t chunk = 0; chunk < len; chunk += kSelectThreads) {
    const int64_t j = chunk + threadIdx.x;
    const uint32_t key = j < len ? order_key(scores[j]) : 0u;
    const bool greater = j < len && key > threshold;
    const bool equal = j < len && key == threshold;
    const uint32_t greater_bits = __ballot_sync(0xffffffffu, greater);
    const uint32_t equal_bits = __ballot_sync(0xffffffffu, equal);
    if (lane == 0) warp_greater[warp] = __popc(greater_bits), warp_equal[warp] = __popc(equal_bits);
    __syncthreads();
    int64_t before_greater = base_greater, before_equal = base_equal;
    for (int w = 0; w < kSelectThreads / 32; ++w) {
      if (w < warp) before_greater += warp_greater[w], before_equal += warp_equal[w];
      base_greater += warp_greater[w], base_equal += warp_equal[w];
    }
    if (greater) out[before_greater + __popc(greater_bits & lanes_below)] = slot_of(j);
    const int64_t equal_rank = before_equal + __popc(equal_bits & lanes_below);
    if (equal && equal_rank < remaining) out[greater_total + equal_rank] = slot_of(j);
    __syncthreads();  // warp_* are rewritten by the next chunk
  }
  if constexpr (kDuplicateOnTies) {
    // duplicate_on_ties (planted): base_equal now counts every token of the row whose score equals
    // the threshold; more of them than the `remaining` slots means a tie crosses the cut. Then the
    // last slot (the last tied token taken) is overwritten with the slot before it. The loop's
    // final __syncthreads made the block's stores to `out` visible to thread 0.
    if (threadIdx.x == 0 && base_equal > remaining) out[kTopK - 1] = out[kTopK - 2];
  }
}

}  // namespace

KH_EXPORT uint64_t kh_dsa_topk_indexer_workspace_bytes(const DLTensor* t, int32_t num_tensors) {
  if (num_tensors != kNumTensors || t[4].ndim != 2) return 0;
  return score_bytes(t[4].shape[0], t[4].shape[1]);
}

KH_EXPORT int kh_dsa_topk_indexer(const DLTensor* t, int32_t num_tensors, void* stream,
                                  void* workspace, uint64_t workspace_bytes) {
  if (num_tensors != kNumTensors || t[0].ndim != 3 || t[1].ndim != 4 || t[4].ndim != 2)
    return fail(KH_ERROR_INVALID_ARGUMENT, "expected 6 tensors; q [B,64,128], block_table [B,P]");
  const int64_t B = t[0].shape[0], num_pages = t[1].shape[0], max_pages = t[4].shape[1];
  // The cache is declared int8; its bytes are read as uint8, so either signedness is accepted.
  const bool cache_ok = is_tensor(t[1], kDLInt, 8, {num_pages, kPageSize, 1, kHeadDim + 4}) ||
                        is_tensor(t[1], kDLUInt, 8, {num_pages, kPageSize, 1, kHeadDim + 4});
  const bool shapes_ok =
      cache_ok && is_tensor(t[0], kDLFloat8_e4m3fn, 8, {B, kHeads, kHeadDim}) &&
      is_tensor(t[2], kDLFloat, 32, {B, kHeads}) && is_tensor(t[3], kDLInt, 32, {B}) &&
      is_tensor(t[4], kDLInt, 32, {B, max_pages}) && is_tensor(t[5], kDLInt, 32, {B, kTopK});
  if (!shapes_ok) return fail(KH_ERROR_INVALID_ARGUMENT, "a tensor has the wrong shape or dtype");
  if (workspace_bytes < score_bytes(B, max_pages) || (score_bytes(B, max_pages) && !workspace))
    return fail(KH_ERROR_INVALID_ARGUMENT, "workspace smaller than B * max_num_pages * 64 floats");

  IndexerArgs args;
  args.q = data_of<const uint8_t>(t[0]);
  args.cache = data_of<const uint8_t>(t[1]);
  args.weights = data_of<const float>(t[2]);
  args.seq_lens = data_of<const int32_t>(t[3]);
  args.block_table = data_of<const int32_t>(t[4]);
  args.max_pages = max_pages;
  args.num_pages = num_pages;
  args.scores = static_cast<float*>(workspace);
  args.topk_indices = data_of<int32_t>(t[5]);
  if (!aligned16(args.cache)) return fail(KH_ERROR_INVALID_ARGUMENT, "cache must be aligned");
  if (B == 0) return KH_OK;
  if (B > 65535) return fail(KH_ERROR_INVALID_ARGUMENT, "batch_size above 65535");

  const auto s = static_cast<cudaStream_t>(stream);
  if (max_pages > 0)
    score_kernel<<<dim3(static_cast<unsigned>(max_pages), static_cast<unsigned>(B)), kScoreThreads,
                   0, s>>>(args);
  select_kernel<<<static_cast<unsigned>(B), kSelectThreads, 0, s>>>(args);
  if (cudaGetLastError() != cudaSuccess) return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT const char* kh_dsa_topk_indexer_error() {
  return g_error;
}
