// Micro-benchmark: where the time of a small GDN prefill call goes, role by role. Built with a
// GDN prefill folder's sources that carry trace.cuh (run_gdn_timeline.sh: -DGDN_TRACE and the
// folder's -I), it calls khk::gdn_prefill::dispatch() on fresh inputs and reads the %globaltimer
// marks the decoupled small-chunk CTAs leave (trace.cuh: entry, sequence known, rings started,
// chunk 0's tile landed, its phase A and phase B done, its chain step done, the last chain step
// done, the state stored). Per case, the median over kReps calls, each after a 256 MiB L2 flush,
// of each mark's time from the first CTA's entry (median CTA and last CTA), the chain's time per
// chunk after the first ((last - first chain step) / (chunks - 1) of the longest sequence), and
// the call's span by CUDA events (host launch included). Calls the dispatch sends elsewhere (the
// token-serial route below 32 tokens) have no marks: zeros. Prints one JSON object.
// GDN_TIMELINE_FLUSH=0 skips the flush; GDN_TIMELINE_WARM_CALL=1 makes one call on other buffers
// between the flush and the timed call (the code warm, the data cold); GDN_TRACE_CHUNK=c takes the
// per-chunk marks at chunk c where the folder's trace.cuh supports it (GDN_TRACE_HAS_CHUNK).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dispatch.cu"
#include "gdn_prefill_buffers.cuh"
#include "micro_common.cuh"

namespace {

using micro::ok;
using micro::env_flag;
using micro::event_span_us;
using micro::median;

namespace gp = khk::gdn_prefill;

const char* const kPhaseNames[gp::kTracePhases] = {
    "entry",           "sequence_known",   "rings_started",    "chunk0_tile_landed",
    "chunk0_phase_a",  "chunk0_phase_b",   "chunk0_chain_step", "last_chain_step",
    "state_stored"};

constexpr int kReps = 15;
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;

struct Case {
  const char* name;
  std::vector<int64_t> lengths;  // tokens per sequence
};

}  // namespace

int main() {
  const std::vector<Case> cases = {
      {"35 x 1", {35}},         {"49 x 1", {49}},          {"67 x 1", {67}},
      {"97 x 1", {97}},         {"134 x 1", {134}},        {"255 x 1", {255}},
      {"139 x 3", {60, 40, 39}}, {"255 x 3", {120, 80, 55}}, {"1000 x 5", {300, 250, 200, 150, 100}},
  };
  constexpr int64_t kMaxTokens = 1024, kMaxSeqs = 8;
  // Two buffer sets: the timed call's, and GDN_TIMELINE_WARM_CALL's.
  micro::PrefillBuffers buffers;
  void *flush, *workspace;
  const uint64_t ws_bytes = std::max<uint64_t>(gp::workspace_bytes(kMaxTokens, kMaxSeqs), 16);
  if (!buffers.allocate(kMaxTokens, kMaxSeqs, 2) ||
      !ok(cudaMalloc(&flush, kFlushBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&workspace, ws_bytes), "cudaMalloc"))
    return 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  // GDN_TIMELINE_FLUSH=0: no L2 flush before the calls (code and inputs may stay in the L2).
  const bool flush_l2 = env_flag("GDN_TIMELINE_FLUSH", true);
  // GDN_TIMELINE_WARM_CALL=1: after the flush, one call of the same case on the second set of
  // buffers, so that the timed call finds the kernels' instructions warm and its own data cold.
  const bool warm_call = env_flag("GDN_TIMELINE_WARM_CALL", false);
  int traced_chunk = 0;
#if defined(GDN_TRACE_HAS_CHUNK)
  // GDN_TRACE_CHUNK=c: the per-chunk marks at chunk c (a folder whose trace.cuh has g_trace_chunk).
  if (const char* c = std::getenv("GDN_TRACE_CHUNK")) traced_chunk = std::atoi(c);
  cudaMemcpyToSymbol(gp::g_trace_chunk, &traced_chunk, sizeof traced_chunk);
#endif
  void* trace_marks = nullptr;  // gp::g_trace, cleared before every call
  if (!ok(cudaGetSymbolAddress(&trace_marks, gp::g_trace), "cudaGetSymbolAddress")) return 1;

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("{\"gpu\": \"%s\", \"method\": \"%%globaltimer marks of the decoupled small-chunk "
              "CTAs (trace.cuh), from the first CTA's entry; median of %d calls, each after %s\", "
              "\"traced_chunk\": %d, \"cases\": [\n",
              prop.name, kReps,
              !flush_l2   ? "the one before (no L2 flush)"
              : warm_call ? "a 256 MiB L2 flush and one call on other buffers (warm code)"
                          : "a 256 MiB L2 flush",
              traced_chunk);
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    std::vector<int64_t> offsets{0};
    for (int64_t n : c.lengths) offsets.push_back(offsets.back() + n);
    const int64_t tokens = offsets.back(), seqs = static_cast<int64_t>(c.lengths.size());
    const int64_t longest = *std::max_element(c.lengths.begin(), c.lengths.end());
    const int64_t chunks = (longest + gp::kSmallChunk - 1) / gp::kSmallChunk;
    for (int set = 0; set < 2; ++set)
      cudaMemcpy(buffers.offsets(set), offsets.data(), offsets.size() * 8, cudaMemcpyHostToDevice);
    const gp::PrefillArgs args = buffers.args(0, tokens, seqs);
    const gp::PrefillArgs other = buffers.args(1, tokens, seqs);
    std::vector<double> span, per_chunk, phases[gp::kTracePhases][2];
    int ctas = 0;
    for (int rep = 0; rep < kReps; ++rep) {
      if (flush_l2) cudaMemset(flush, rep, kFlushBytes);
      if (warm_call && !ok(gp::dispatch(other, workspace, ws_bytes, nullptr), "warm call"))
        return 1;
      cudaMemset(trace_marks, 0, sizeof(gp::g_trace));
      span.push_back(event_span_us(start, stop, [&] {
        return ok(gp::dispatch(args, workspace, ws_bytes, nullptr), "dispatch");
      }));
      if (span.back() < 0) return 1;
      static uint64_t trace[gp::kTraceCtas][gp::kTracePhases];
      cudaMemcpyFromSymbol(trace, gp::g_trace, sizeof(trace));
      ctas = 0;
      uint64_t origin = ~uint64_t{0};
      for (int i = 0; i < gp::kTraceCtas; ++i)
        if (trace[i][gp::kTraceEntry] != 0) ++ctas, origin = std::min(origin, trace[i][0]);
      if (ctas == 0) continue;
      double step = 0.0;
      for (int p = 0; p < gp::kTracePhases; ++p) {
        std::vector<double> t;
        for (int i = 0; i < gp::kTraceCtas; ++i)
          if (trace[i][p] != 0) t.push_back((trace[i][p] - origin) / 1000.0);
        if (t.empty()) continue;
        phases[p][0].push_back(median(t));
        phases[p][1].push_back(*std::max_element(t.begin(), t.end()));
      }
      if (chunks > 1 + traced_chunk)
        for (int i = 0; i < gp::kTraceCtas; ++i)
          if (trace[i][gp::kTraceLastChain] != 0 && trace[i][gp::kTraceFirstChain] != 0)
            step = std::max(step, (trace[i][gp::kTraceLastChain] - trace[i][gp::kTraceFirstChain]) /
                                      1000.0 / static_cast<double>(chunks - 1 - traced_chunk));
      per_chunk.push_back(step);
    }
    std::printf("  {\"case\": \"%s\", \"tokens\": %lld, \"sequences\": %lld, \"chunks\": %lld, "
                "\"traced_ctas\": %d, \"event_span_us\": %.2f, \"chain_us_per_chunk\": %.3f,\n"
                "   \"marks\": {",
                c.name, static_cast<long long>(tokens), static_cast<long long>(seqs),
                static_cast<long long>(chunks), ctas, median(span), median(per_chunk));
    for (int p = 0; p < gp::kTracePhases; ++p)
      std::printf("%s\"%s\": [%.2f, %.2f]", p ? ", " : "", kPhaseNames[p], median(phases[p][0]),
                  median(phases[p][1]));
    std::printf("}}%s\n", ci + 1 < cases.size() ? "," : "");
  }
  std::printf("], \"mark_format\": \"[median CTA, last CTA] in us from the first CTA's entry\"}\n");
  return 0;
}
