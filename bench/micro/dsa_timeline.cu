// Micro-benchmark: where the time of one DSA sparse attention call goes, phase by phase. Built
// with the split route's sources (run_dsa_timeline.sh: -DDSA_TRACE and the folder's -I), it calls
// khk::dsa_attention::dispatch() on fresh inputs and reads the %globaltimer marks the kernels
// leave (trace.cuh). Per case, the median over kReps calls, each after a 256 MiB L2 flush (or
// none, the "warm" cases), of each phase's time from the first split CTA's start:
//   split: 0 entry, 1 indices compacted, 2 first block landed, 3 blocks computed, 4 stored,
//          5 merged in the grid, 6 past the grid barrier (the fused launch of a few tokens)
//   merge: 0 entry, 1 past griddepcontrol.wait, 2 stored
// as the median and the last of the CTAs that reached it (a CTA that left early, or a route
// without the phase, has none: 0), and the call's span by CUDA events (host launch included).
// DSA_TIMELINE_WARM_CALL=1: after each flush, one call of the same case on other indices, outputs
// and workspace before the timed call (the kernels' code warm, the timed call's rows, indices and
// outputs cold): what a phase costs beyond its data when its instructions come from DRAM.
// Prints one JSON object.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "dispatch.cu"
#include "micro_common.cuh"

namespace {

using micro::ok;
using micro::env_flag;
using micro::event_span_us;
using micro::median;

namespace dsa = khk::dsa_attention;

// The marks trace.cuh's callers leave, per kernel (split, merge), in phase order.
const char* const kPhaseNames[2][dsa::kTracePhases] = {
    {"entry", "indices_compacted", "first_block_landed", "blocks_computed", "stored", "merged",
     "past_grid_barrier"},
    {"entry", "split_results_visible", "stored"}};
constexpr int kPhases[2] = {7, 3};

constexpr int kReps = 15;
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;
constexpr int64_t kPages = 8462;  // the official workloads' cache
constexpr int64_t kRows = kPages * dsa::kPageSize;

struct Case {
  const char* name;
  int tokens;
  int valid;        // valid indices per token (the rest -1)
  bool scattered;   // random rows, else one contiguous span per token
  bool flush;
};

// The median and the largest of phase `phase` over the `ctas` CTAs that reached it, in us after
// `origin`; false when none did.
bool phase_stats(const uint64_t (*trace)[dsa::kTracePhases], int ctas, int phase, uint64_t origin,
                 double& mid, double& last) {
  std::vector<double> t;
  for (int c = 0; c < ctas; ++c)
    if (trace[c][phase] != 0) t.push_back((trace[c][phase] - origin) / 1000.0);
  if (t.empty()) return false;
  mid = median(t);
  last = *std::max_element(t.begin(), t.end());
  return true;
}

}  // namespace

int main() {
  const std::vector<Case> cases = {
      {"1 token, 27 rows (span)", 1, 27, false, true},
      {"1 token, 2048 rows (scattered)", 1, 2048, true, true},
      {"2 tokens, 100 rows (span)", 2, 100, false, true},
      {"2 tokens, 200 rows (span)", 2, 200, false, true},
      {"2 tokens, 400 rows (span)", 2, 400, false, true},
      {"8 tokens, 600 rows (span)", 8, 600, false, true},
      {"8 tokens, 2048 rows (scattered)", 8, 2048, true, true},
      {"8 tokens, 2048 rows (scattered), L2 warm", 8, 2048, true, false},
      {"1 token, 27 rows (span), L2 warm", 1, 27, false, false},
  };
  constexpr int kMaxTokens = 8;
  constexpr int kSets = 2;  // indices, outputs and workspace: the timed call's, the warm call's
  const bool warm_call = env_flag("DSA_TIMELINE_WARM_CALL", false);
  __nv_bfloat16 *q_nope, *q_pe, *ckv, *kpe, *out;
  float* lse;
  int32_t* indices;
  char* workspace;
  void* flush;
  const uint64_t workspace_bytes = dsa::workspace_bytes(1) * kMaxTokens;
  if (!ok(cudaMalloc(&q_nope, kMaxTokens * dsa::kHeads * dsa::kCkvDim * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&q_pe, kMaxTokens * dsa::kHeads * dsa::kKpeDim * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&ckv, kRows * dsa::kCkvDim * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&kpe, kRows * dsa::kKpeDim * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&out, kSets * kMaxTokens * dsa::kHeads * dsa::kCkvDim * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&lse, kSets * kMaxTokens * dsa::kHeads * 4), "cudaMalloc") ||
      !ok(cudaMalloc(&indices, kSets * kMaxTokens * dsa::kTopK * 4), "cudaMalloc") ||
      !ok(cudaMalloc(&flush, kFlushBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&workspace, kSets * std::max<uint64_t>(workspace_bytes, 16)), "cudaMalloc"))
    return 1;
  // Small values: the numbers do not matter here, only that they are finite.
  cudaMemset(q_nope, 0x3c, kMaxTokens * dsa::kHeads * dsa::kCkvDim * 2);
  cudaMemset(q_pe, 0x3c, kMaxTokens * dsa::kHeads * dsa::kKpeDim * 2);
  cudaMemset(ckv, 0x3c, kRows * dsa::kCkvDim * 2);
  cudaMemset(kpe, 0x3c, kRows * dsa::kKpeDim * 2);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::mt19937 rng(7);
  void* trace_marks = nullptr;  // dsa::g_trace, cleared before every call
  if (!ok(cudaGetSymbolAddress(&trace_marks, dsa::g_trace), "cudaGetSymbolAddress")) return 1;

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("{\"gpu\": \"%s\", \"method\": \"%%globaltimer marks of the split route's kernels "
              "(trace.cuh), from the first split CTA's start; median of %d calls%s\", \"cases\": [\n",
              prop.name, kReps,
              warm_call ? ", each flush followed by one call on other indices (warm code)" : "");
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    // The timed call's indices, then the warm call's (other rows).
    std::vector<int32_t> host(static_cast<std::size_t>(kSets) * c.tokens * dsa::kTopK, -1);
    std::vector<double> span, phases[2][dsa::kTracePhases][2];
    int split_ctas = 0, merge_ctas = 0;
    for (int rep = 0; rep < kReps; ++rep) {
      for (int t = 0; t < kSets * c.tokens; ++t) {
        const int64_t first = std::uniform_int_distribution<int64_t>(0, kRows - c.valid)(rng);
        for (int j = 0; j < c.valid; ++j)
          host[t * dsa::kTopK + j] = static_cast<int32_t>(
              c.scattered ? std::uniform_int_distribution<int64_t>(0, kRows - 1)(rng) : first + j);
      }
      cudaMemcpy(indices, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
      dsa::AttentionArgs args{q_nope, q_pe, ckv, kpe, indices, 0.1f, out, lse, c.tokens, kRows};
      if (c.flush) cudaMemset(flush, rep, kFlushBytes);
      if (c.flush && warm_call) {
        dsa::AttentionArgs other = args;
        other.indices = indices + c.tokens * dsa::kTopK;
        other.output = out + kMaxTokens * dsa::kHeads * dsa::kCkvDim;
        other.lse = lse + kMaxTokens * dsa::kHeads;
        if (!ok(dsa::dispatch(other, workspace + workspace_bytes, workspace_bytes, nullptr),
                "warm call"))
          return 1;
      }
      cudaMemset(trace_marks, 0, sizeof(dsa::g_trace));
      span.push_back(event_span_us(start, stop, [&] {
        return ok(dsa::dispatch(args, workspace, workspace_bytes, nullptr), "dispatch");
      }));
      if (span.back() < 0) return 1;
      static uint64_t trace[2][dsa::kTraceCtas][dsa::kTracePhases];
      cudaMemcpyFromSymbol(trace, dsa::g_trace, sizeof(trace));
      split_ctas = merge_ctas = 0;
      while (split_ctas < dsa::kTraceCtas && trace[0][split_ctas][0] != 0) ++split_ctas;
      while (merge_ctas < dsa::kTraceCtas && trace[1][merge_ctas][0] != 0) ++merge_ctas;
      uint64_t origin = ~uint64_t{0};
      for (int i = 0; i < split_ctas; ++i) origin = std::min(origin, trace[0][i][0]);
      for (int kernel = 0; kernel < 2; ++kernel)
        for (int p = 0; p < kPhases[kernel]; ++p) {
          const int ctas = kernel == 0 ? split_ctas : merge_ctas;
          double mid, last;
          if (!phase_stats(trace[kernel], ctas, p, origin, mid, last)) continue;
          phases[kernel][p][0].push_back(mid);
          phases[kernel][p][1].push_back(last);
        }
    }
    std::printf("  {\"case\": \"%s\", \"tokens\": %d, \"valid_per_token\": %d, \"split_ctas\": %d, "
                "\"merge_ctas\": %d, \"event_span_us\": %.2f,\n",
                c.name, c.tokens, c.valid, split_ctas, merge_ctas, median(span));
    for (int kernel = 0; kernel < 2; ++kernel) {
      std::printf("   \"%s\": {", kernel == 0 ? "split" : "merge");
      for (int p = 0; p < kPhases[kernel]; ++p)
        std::printf("%s\"%s\": [%.2f, %.2f]", p ? ", " : "", kPhaseNames[kernel][p],
                    median(phases[kernel][p][0]), median(phases[kernel][p][1]));
      std::printf("}%s\n", kernel == 0 ? "," : "");
    }
    std::printf("  }%s\n", k + 1 < cases.size() ? "," : "");
  }
  std::printf("], \"phase_format\": \"[median CTA, last CTA] in us from the first split CTA's "
              "start\"}\n");
  return 0;
}
