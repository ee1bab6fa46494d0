// Micro-benchmark: how fast a GPU gathers the rows a DSA call of 8 tokens x 2048 scattered indices
// reads (issue 9's bandwidth case), with nothing else in the kernel. The split route's layout
// (kernels/dsa_attention/route_split_kv.cuh): 16 CTAs per token, one per SM, each reading its 128
// rows' indices, then every row by bulk copies (1 KiB of ckv, 128 B of kpe; the route's
// bulk_copy.cuh) into two 64-row stages of shared memory, all in flight at once. Each CTA stores
// %globaltimer at entry, when its indices are in, and when each stage has landed. Cases, each
// after a 256 MiB L2 flush (the official timer's), the median of kReps launches:
//   scattered          random rows (the official scattered workloads' pattern)
//   scattered, ckv     the same rows without their kpe (1 KiB copies only)
//   scattered, sorted  the same rows, each CTA's in ascending order
//   span               each token's 2048 rows one contiguous span (the dense-page workloads)
//   stream             every CTA's rows consecutive and the CTAs' spans adjacent: one stream of
//                      the same bytes, the rate the issue's floor assumes
//   ..., loads         the same bytes by 16-byte loads into registers from 32 warps per CTA
//                      (each thread 9 loads, all issued before any is used) instead of bulk
//                      copies: whether the copy engine or the SM's memory pipe caps a one-wave read
// The rate is bytes over the span from the first CTA's entry to the last stage's landing, so the
// index round trip is inside it, as in the route; "after indices" starts at the median CTA's
// indices instead. Prints one JSON object.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "../../kernels/dsa_attention/bulk_copy.cuh"
#include "micro_common.cuh"

namespace {

using micro::now_ns;
using micro::ok;
using micro::median;

namespace dsa = khk::dsa_attention;

constexpr int kReps = 15;
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;
constexpr int64_t kRows = int64_t{8462} * 64;  // the official workloads' cache (pages x 64)
constexpr int kTokens = 8;
constexpr int kTopK = 2048;
constexpr int kSplits = 16;                    // CTAs per token (the route's MAX_SPLITS)
constexpr int kCtas = kTokens * kSplits;
constexpr int kRowsPerCta = kTopK / kSplits;   // 128
constexpr int kStageRows = 64;
constexpr int kCkvBytes = 1024, kKpeBytes = 128, kRowBytes = kCkvBytes + kKpeBytes;
constexpr int kThreads = 128;
constexpr int kMarks = 4;  // entry, indices in, stage 0 landed, stage 1 landed

// CTA c gathers slots c % kSplits, + kSplits, ... of token c / kSplits (the route's deal).
__global__ void __launch_bounds__(kThreads, 1)
    gather_rows(const int32_t* indices, const char* ckv, const char* kpe, bool with_kpe,
                uint64_t* marks) {
  extern __shared__ __align__(128) unsigned char rows[];
  __shared__ uint64_t landed[2];
  uint64_t* mine = marks + blockIdx.x * kMarks;
  if (threadIdx.x == 0) mine[0] = now_ns();
  const int token = blockIdx.x / kSplits, split = blockIdx.x % kSplits;
  const int r = threadIdx.x;  // one row per thread
  const int64_t row = indices[token * kTopK + r * kSplits + split];
  const int stage = r / kStageRows;
  const uint32_t per_row = with_kpe ? kRowBytes : kCkvBytes;
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2; ++s) dsa::barrier_init(&landed[s], 1);
    dsa::barrier_init_fence();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mine[1] = now_ns();
    for (int s = 0; s < 2; ++s) dsa::barrier_arrive_expect(&landed[s], kStageRows * per_row);
  }
  __syncthreads();  // the expected bytes are set before any copy can land
  unsigned char* dst = rows + r * kRowBytes;
  dsa::bulk_copy_to_shared(dst, ckv + row * kCkvBytes, kCkvBytes, &landed[stage]);
  if (with_kpe) dsa::bulk_copy_to_shared(dst + kCkvBytes, kpe + row * kKpeBytes, kKpeBytes, &landed[stage]);
  if (threadIdx.x == 0) {
    dsa::barrier_wait(&landed[0], 0);
    mine[2] = now_ns();
    dsa::barrier_wait(&landed[1], 0);
    mine[3] = now_ns();
  }
  __syncthreads();  // no CTA leaves with copies in flight
}

// The same CTAs' rows by plain loads: 1024 threads, 9 pieces of 16 bytes each (128 rows x 72
// pieces: 64 of ckv, 8 of kpe), all loads in flight before the first use. Stage marks: both the
// end.
constexpr int kLoadThreads = 1024;
constexpr int kPiecesPerRow = (kCkvBytes + kKpeBytes) / 16;
constexpr int kLoadsPerThread = kRowsPerCta * kPiecesPerRow / kLoadThreads;
static_assert(kLoadsPerThread * kLoadThreads == kRowsPerCta * kPiecesPerRow);

__global__ void __launch_bounds__(kLoadThreads, 1)
    load_rows(const int32_t* indices, const char* ckv, const char* kpe, uint64_t* marks) {
  __shared__ int64_t rows[kRowsPerCta];
  uint64_t* mine = marks + blockIdx.x * kMarks;
  if (threadIdx.x == 0) mine[0] = now_ns();
  const int token = blockIdx.x / kSplits, split = blockIdx.x % kSplits;
  if (threadIdx.x < kRowsPerCta)
    rows[threadIdx.x] = indices[token * kTopK + threadIdx.x * kSplits + split];
  __syncthreads();
  if (threadIdx.x == 0) mine[1] = now_ns();
  uint4 v[kLoadsPerThread];
#pragma unroll
  for (int k = 0; k < kLoadsPerThread; ++k) {
    const int piece = k * kLoadThreads + threadIdx.x;
    const int r = piece / kPiecesPerRow, p = piece % kPiecesPerRow;
    const uint4* src = p < kCkvBytes / 16
                           ? reinterpret_cast<const uint4*>(ckv + rows[r] * kCkvBytes) + p
                           : reinterpret_cast<const uint4*>(kpe + rows[r] * kKpeBytes) + p - kCkvBytes / 16;
    v[k] = __ldg(src);
  }
  uint32_t x = 0;
#pragma unroll
  for (int k = 0; k < kLoadsPerThread; ++k) x ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
  __syncthreads();
  if (threadIdx.x == 0) mine[2] = mine[3] = now_ns();
  if (x == 0x9e3779b9u) mine[1] = x;  // keeps the loads (the cache is zeros: never true)
}

enum class Pattern { kScattered, kSorted, kSpan, kStream };

// The indices of one launch: token t's slot j (CTA split = j % kSplits takes slot j).
std::vector<int32_t> make_indices(Pattern p, std::mt19937& rng) {
  std::vector<int32_t> idx(kTokens * kTopK);
  std::uniform_int_distribution<int64_t> any(0, kRows - 1), start(0, kRows - kTopK),
      stream_start(0, kRows / (kTokens * kTopK) - 1);  // in whole streams of the call's rows
  for (int t = 0; t < kTokens; ++t) {
    int32_t* tok = idx.data() + t * kTopK;
    if (p == Pattern::kSpan) {
      const int64_t first = start(rng);
      for (int j = 0; j < kTopK; ++j) tok[j] = static_cast<int32_t>(first + j);
    } else if (p == Pattern::kStream) {  // CTA (t, s) reads rows base + (t * 16 + s) * 128 + r
      const int64_t base = stream_start(rng) * kTokens * kTopK;
      for (int j = 0; j < kTopK; ++j) {
        const int s = j % kSplits, r = j / kSplits;
        tok[j] = static_cast<int32_t>(base + (int64_t{t} * kSplits + s) * kRowsPerCta + r);
      }
    } else {
      for (int j = 0; j < kTopK; ++j) tok[j] = static_cast<int32_t>(any(rng));
      if (p == Pattern::kSorted)
        for (int s = 0; s < kSplits; ++s) {  // each CTA's slots s, s + 16, ... in ascending order
          std::vector<int32_t> mine;
          for (int j = s; j < kTopK; j += kSplits) mine.push_back(tok[j]);
          std::sort(mine.begin(), mine.end());
          for (int k = 0; k < kRowsPerCta; ++k) tok[s + k * kSplits] = mine[k];
        }
    }
  }
  return idx;
}

}  // namespace

int main() {
  struct Case {
    const char* name;
    Pattern pattern;
    bool with_kpe;
    bool loads = false;  // load_rows instead of gather_rows
  };
  const Case cases[] = {{"scattered", Pattern::kScattered, true},
                        {"scattered, ckv", Pattern::kScattered, false},
                        {"scattered, sorted", Pattern::kSorted, true},
                        {"span", Pattern::kSpan, true},
                        {"stream", Pattern::kStream, true},
                        {"scattered, loads", Pattern::kScattered, true, true},
                        {"stream, loads", Pattern::kStream, true, true}};
  char *ckv, *kpe;
  int32_t* indices;
  uint64_t* marks;
  void* flush;
  if (!ok(cudaMalloc(&ckv, kRows * kCkvBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&kpe, kRows * kKpeBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&indices, kTokens * kTopK * 4), "cudaMalloc") ||
      !ok(cudaMalloc(&marks, kCtas * kMarks * 8), "cudaMalloc") ||
      !ok(cudaMalloc(&flush, kFlushBytes), "cudaMalloc"))
    return 1;
  const int smem = kRowsPerCta * kRowBytes;
  if (!ok(cudaFuncSetAttribute(gather_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
          "cudaFuncSetAttribute"))
    return 1;
  cudaMemset(ckv, 0, kRows * kCkvBytes);
  cudaMemset(kpe, 0, kRows * kKpeBytes);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::mt19937 rng(11);
  std::printf("{\"gpu\": \"%s\", \"method\": \"%%globaltimer marks in %d CTAs of %d threads (16 per "
              "token, 128 rows each by bulk copies into two 64-row stages; the loads cases: %d threads' "
              "16-byte loads), median of %d launches, "
              "each after a %zu MiB L2 flush\", \"cases\": [\n",
              prop.name, kCtas, kThreads, kLoadThreads, kReps, kFlushBytes >> 20);
  std::vector<uint64_t> host(kCtas * kMarks);
  for (std::size_t k = 0; k < std::size(cases); ++k) {
    const Case& c = cases[k];
    const double bytes = double{kCtas} * kRowsPerCta * (c.with_kpe ? kRowBytes : kCkvBytes);
    std::vector<double> span, after_indices, first_stage, indices_in;
    for (int rep = 0; rep < kReps; ++rep) {
      const std::vector<int32_t> idx = make_indices(c.pattern, rng);
      cudaMemcpy(indices, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice);
      cudaMemset(flush, rep, kFlushBytes);
      if (c.loads)
        load_rows<<<kCtas, kLoadThreads>>>(indices, ckv, kpe, marks);
      else
        gather_rows<<<kCtas, kThreads, smem>>>(indices, ckv, kpe, c.with_kpe, marks);
      if (!ok(cudaDeviceSynchronize(), c.name)) return 1;
      cudaMemcpy(host.data(), marks, host.size() * 8, cudaMemcpyDeviceToHost);
      uint64_t origin = ~uint64_t{0}, end = 0;
      std::vector<double> idx_in, stage0;
      for (int i = 0; i < kCtas; ++i) origin = std::min(origin, host[i * kMarks]);
      for (int i = 0; i < kCtas; ++i) {
        end = std::max(end, host[i * kMarks + 3]);
        idx_in.push_back((host[i * kMarks + 1] - origin) / 1000.0);
        stage0.push_back((host[i * kMarks + 2] - origin) / 1000.0);
      }
      span.push_back((end - origin) / 1000.0);
      indices_in.push_back(median(idx_in));
      first_stage.push_back(median(stage0));
      after_indices.push_back(span.back() - indices_in.back());
    }
    const double s = median(span), a = median(after_indices);
    std::printf("  {\"case\": \"%s\", \"bytes\": %.0f, \"span_us\": %.2f, \"indices_in_us\": %.2f, "
                "\"first_stage_us\": %.2f, \"rate_tb_s\": %.2f, \"rate_after_indices_tb_s\": %.2f}%s\n",
                c.name, bytes, s, median(indices_in), median(first_stage), bytes / s / 1e6,
                bytes / a / 1e6, k + 1 < std::size(cases) ? "," : "");
  }
  std::printf("]}\n");
  return 0;
}
