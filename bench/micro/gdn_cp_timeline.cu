// Micro-benchmark: when each piece of the GDN prefill context-parallel route runs. Built with a
// GDN prefill folder whose trace.cuh has the context-parallel marks (GDN_TRACE_HAS_CP:
// run_gdn_cp_timeline.sh passes -DGDN_TRACE and the folder's -I), it calls
// khk::gdn_prefill::dispatch() on calls of the official lengths the route takes, each after a
// 256 MiB L2 flush, and reads the %globaltimer marks of the map pass (a CTA's entry, its chain's
// last step, its walk's flag set), the scan (a CTA's entry, its first groups seen, each step's end)
// and the correction (a CTA's start once its inputs are ready, its end). Of kReps calls it reports
// the one of median event span, in us from the first map CTA's entry, per sequence:
//   walks[g]        [zero walk, identity walk] flag set of group g (median over the heads)
//   walks_last[g]   [zero walk, identity walk] flag set of group g (the last head)
//   map_entry       [first, median, last] entry of the sequence's map CTAs
//   scan_entry      [first, median, last] entry of the sequence's scan CTAs
//   scan_steps[s]   [median, last] end of step s over the sequence's scan CTAs
//   scan_heads[h]   [last entry, last step's end] of head h's scan CTAs
//   correction[g]   [first start, last end] of group g's correction CTAs
//   correction_ctas[g - 1]  [median start, last start, median time, longest time] of those
//                   CTAs, a CTA's time from its start to its end
// and where the folder's trace.cuh records each CTA's SM (GDN_TRACE_HAS_SMID):
//   map_ctas        [head, walk, SM, flag set] of each map CTA of the sequence
//   scan_ctas       [head, CTA of the head, SM, entry, last step's end] of each scan CTA
// Prints one JSON object.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "dispatch.cu"
#include "gdn_prefill_buffers.cuh"
#include "micro_common.cuh"

#if !defined(GDN_TRACE_HAS_CP)
#error "the folder's trace.cuh has no context-parallel marks (GDN_TRACE_HAS_CP)"
#endif

namespace {

using micro::event_span_us;
using micro::median;
using micro::ok;

namespace gp = khk::gdn_prefill;

constexpr int kReps = 9;
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;

struct Case {
  const char* name;
  std::vector<int64_t> lengths;  // tokens per sequence (the harness's structural cu_seqlens)
};

using Marks = uint64_t[gp::kTraceCtas][gp::kTracePhases];
using ScanMarks = uint64_t[gp::kTraceCtas][gp::kTraceScanMarks];
using CorrectMarks = uint64_t[gp::kTraceCtas][2];

double us(uint64_t t, uint64_t origin) { return t ? (static_cast<double>(t) - origin) / 1e3 : -1.0; }

/// The correction CTA of (sequence s, group g, head h, tile t): the folder's order where it names
/// one (small_correct_cta, by sequence rank shortest first or by sequence), else group first.
int64_t correct_cta(const Case& c, int64_t s, int g, int h, int64_t t, int groups, int64_t tiles) {
  const int64_t seqs = static_cast<int64_t>(c.lengths.size());
#if defined(GDN_CORRECT_CTA_OF)
  int64_t longer = 0;  // sequence_of_rank's rank, longest first, ties by index
  for (int64_t j = 0; j < seqs; ++j)
    longer += c.lengths[j] > c.lengths[s] || (c.lengths[j] == c.lengths[s] && j < s);
  const int64_t key = gp::kSmallCorrectShortFirst ? seqs - 1 - longer : s;
  return gp::small_correct_cta(key, g, h, t, groups, seqs, tiles);
#else
  (void)groups;
  return ((g - 1) * seqs * gp::kVHeads + s * gp::kVHeads + h) * tiles + t;
#endif
}

/// The map CTA of (head, walk index): the folder's order where it names one (small_cp_map_cta_of),
/// else head-major.
int64_t map_cta(int64_t head, int index, int64_t heads, int groups) {
#if defined(GDN_MAP_CTA_OF)
  return gp::small_cp_map_cta_of(head, index, heads, groups);
#else
  (void)heads;
  return head * gp::small_cp_map_walks(groups) + index;
#endif
}

/// One call's marks as JSON, per sequence.
void print_call(const Case& c, int groups, int64_t tiles, const Marks& map, const ScanMarks& scan,
                const CorrectMarks& corr, const uint32_t* map_smid, const uint32_t* scan_smid) {
  const int64_t seqs = static_cast<int64_t>(c.lengths.size()), heads = seqs * gp::kVHeads;
  const int walks = gp::small_cp_map_walks(groups);
  uint64_t origin = ~uint64_t{0};
  for (int64_t i = 0; i < heads * walks; ++i)
    if (map[i][gp::kTraceEntry]) origin = std::min(origin, map[i][gp::kTraceEntry]);
  std::printf("   \"sequences\": [");
  for (int64_t s = 0; s < seqs; ++s) {
    std::printf("%s\n    {\"tokens\": %lld, \"walks\": [", s ? "," : "",
                static_cast<long long>(c.lengths[s]));
    // Per group: the median and the last head's flag, so that a late scan step can be told
    // from a late walk of its own head.
    std::vector<double> last_zero, last_identity, map_entry;
    for (int g = 0; g < groups; ++g) {
      std::vector<double> zero, identity;
      for (int h = 0; h < gp::kVHeads; ++h) {
        const int64_t head = s * gp::kVHeads + h;
        const int64_t z = map_cta(head, g, heads, groups);
        zero.push_back(us(map[z][gp::kTraceItem], origin));
        map_entry.push_back(us(map[z][gp::kTraceEntry], origin));
        if (g > 0) {
          const int64_t a = map_cta(head, groups - 1 + g, heads, groups);
          identity.push_back(us(map[a][gp::kTraceItem], origin));
          map_entry.push_back(us(map[a][gp::kTraceEntry], origin));
        }
      }
      std::printf("%s[%.1f, %.1f]", g ? ", " : "", median(zero),
                  identity.empty() ? 0.0 : median(identity));
      last_zero.push_back(*std::max_element(zero.begin(), zero.end()));
      last_identity.push_back(identity.empty() ? 0.0 : *std::max_element(identity.begin(), identity.end()));
    }
    std::printf("],\n     \"walks_last\": [");
    for (int g = 0; g < groups; ++g)
      std::printf("%s[%.1f, %.1f]", g ? ", " : "", last_zero[g], last_identity[g]);
    std::sort(map_entry.begin(), map_entry.end());
    std::printf("],\n     \"map_entry\": [%.1f, %.1f, %.1f", map_entry.front(), median(map_entry),
                map_entry.back());
    std::vector<double> entry;
    std::vector<std::vector<double>> steps(groups - 1);
    for (int h = 0; h < gp::kVHeads; ++h)
      for (int k = 0; k < gp::kScanCtasPerHead; ++k) {
        const int64_t cta = (s * gp::kVHeads + h) * gp::kScanCtasPerHead + k;
        entry.push_back(us(scan[cta][0], origin));
        for (int st = 0; st < groups - 1 && 2 + st < gp::kTraceScanMarks; ++st)
          steps[st].push_back(us(scan[cta][2 + st], origin));
      }
    std::sort(entry.begin(), entry.end());
    std::printf("],\n     \"scan_entry\": [%.1f, %.1f, %.1f], \"scan_steps\": [", entry.front(),
                median(entry), entry.back());
    for (int st = 0; st < groups - 1; ++st)
      std::printf("%s[%.1f, %.1f]", st ? ", " : "", median(steps[st]),
                  *std::max_element(steps[st].begin(), steps[st].end()));
    // Per head: its scan CTAs' last entry and last end of the last step.
    std::printf("],\n     \"scan_heads\": [");
    for (int h = 0; h < gp::kVHeads; ++h) {
      double in = -1.0, done = -1.0;
      for (int k = 0; k < gp::kScanCtasPerHead; ++k) {
        const int64_t cta = (s * gp::kVHeads + h) * gp::kScanCtasPerHead + k;
        in = std::max(in, us(scan[cta][0], origin));
        if (groups < gp::kTraceScanMarks) done = std::max(done, us(scan[cta][groups], origin));
      }
      std::printf("%s[%.1f, %.1f]", h ? ", " : "", in, done);
    }
    // Each correction CTA's start (inputs ready) and end, per group: the group's span, and each
    // CTA's own time, which tells a group's work from its CTAs' starts spread out.
    std::vector<std::vector<std::pair<double, double>>> ctas(groups);
    for (int g = 1; g < groups; ++g)
      for (int h = 0; h < gp::kVHeads; ++h)
        for (int64_t t = 0; t < tiles; ++t) {
          const int64_t cta = correct_cta(c, s, g, h, t, groups, tiles);
          if (cta < gp::kTraceCtas && corr[cta][0])
            ctas[g].emplace_back(us(corr[cta][0], origin), us(corr[cta][1], origin));
        }
    std::printf("],\n     \"correction\": [");
    for (int g = 1; g < groups; ++g) {
      double first = 1e30, last = -1.0;
      for (const auto& [from, to] : ctas[g])
        first = std::min(first, from), last = std::max(last, to);
      std::printf("%s[%.1f, %.1f]", g > 1 ? ", " : "", first, last);
    }
    std::printf("],\n     \"correction_ctas\": [");
    for (int g = 1; g < groups; ++g) {
      std::vector<double> start, took;
      for (const auto& [from, to] : ctas[g]) start.push_back(from), took.push_back(to - from);
      if (start.empty()) start.push_back(-1.0), took.push_back(-1.0);
      std::sort(start.begin(), start.end());
      std::printf("%s[%.1f, %.1f, %.2f, %.2f]", g > 1 ? ", " : "", median(start), start.back(),
                  median(took), *std::max_element(took.begin(), took.end()));
    }
    std::printf("]");
    if (map_smid && scan_smid) {
      // Each CTA of the sequence: its SM and times, to tell a slow walk's SM from the rest.
      std::printf(",\n     \"map_ctas\": [");
      for (int h = 0; h < gp::kVHeads; ++h)
        for (int w = 0; w < walks; ++w) {
          const int64_t cta = map_cta(s * gp::kVHeads + h, w, heads, groups);
          std::printf("%s[%d, %d, %u, %.1f]", h || w ? ", " : "", h, w, map_smid[cta],
                      us(map[cta][gp::kTraceItem], origin));
        }
      std::printf("],\n     \"scan_ctas\": [");
      for (int h = 0; h < gp::kVHeads; ++h)
        for (int k = 0; k < gp::kScanCtasPerHead; ++k) {
          const int64_t cta = (s * gp::kVHeads + h) * gp::kScanCtasPerHead + k;
          std::printf("%s[%d, %d, %u, %.1f, %.1f]", h || k ? ", " : "", h, k, scan_smid[cta],
                      us(scan[cta][0], origin),
                      groups < gp::kTraceScanMarks ? us(scan[cta][groups], origin) : -1.0);
        }
      std::printf("]");
    }
    std::printf("}");
  }
  std::printf("]");
}

}  // namespace

int main() {
  const std::vector<Case> cases = {
      {"1377 x 1", {1377}}, {"2107 x 1", {2107}}, {"3271 x 2", {1309, 1962}},
      {"5709 x 2", {3513, 2196}}};
  constexpr int64_t kMaxTokens = 6144, kMaxSeqs = 2;
  micro::PrefillBuffers buffers;
  void *flush, *workspace;
  uint64_t ws_bytes = 16;
  for (const Case& c : cases) {
    int64_t tokens = 0;
    for (int64_t n : c.lengths) tokens += n;
    ws_bytes = std::max<uint64_t>(ws_bytes, gp::workspace_bytes(tokens, c.lengths.size()));
  }
  if (!buffers.allocate(kMaxTokens, kMaxSeqs, 1) ||
      !ok(cudaMalloc(&flush, kFlushBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&workspace, ws_bytes), "cudaMalloc"))
    return 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  void *map_marks = nullptr, *scan_marks = nullptr, *correct_marks = nullptr;
  if (!ok(cudaGetSymbolAddress(&map_marks, gp::g_trace), "symbol") ||
      !ok(cudaGetSymbolAddress(&scan_marks, gp::g_trace_scan), "symbol") ||
      !ok(cudaGetSymbolAddress(&correct_marks, gp::g_trace_correct), "symbol"))
    return 1;
  static Marks map[kReps];
  static ScanMarks scan[kReps];
  static CorrectMarks corr[kReps];
#if defined(GDN_TRACE_HAS_SMID)
  static uint32_t map_smid[kReps][gp::kTraceCtas], scan_smid[kReps][gp::kTraceCtas];
#endif

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("{\"gpu\": \"%s\", \"method\": \"%%globaltimer marks of the context-parallel route "
              "(trace.cuh, GDN_TRACE_HAS_CP) in us from the first map CTA's entry; of %d calls, "
              "each after a 256 MiB L2 flush, the one of median event span\", \"cases\": [\n",
              prop.name, kReps);
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    std::vector<int64_t> offsets{0};
    for (int64_t n : c.lengths) offsets.push_back(offsets.back() + n);
    const int64_t tokens = offsets.back(), seqs = static_cast<int64_t>(c.lengths.size());
    const int groups = gp::small_cp_groups(tokens, seqs);
    cudaMemcpy(buffers.offsets(0), offsets.data(), offsets.size() * 8, cudaMemcpyHostToDevice);
    const gp::PrefillArgs args = buffers.args(0, tokens, seqs);
    std::vector<double> span;
    for (int rep = 0; rep < kReps; ++rep) {
      cudaMemset(flush, rep, kFlushBytes);
      cudaMemset(map_marks, 0, sizeof(Marks));
      cudaMemset(scan_marks, 0, sizeof(ScanMarks));
      cudaMemset(correct_marks, 0, sizeof(CorrectMarks));
      span.push_back(event_span_us(start, stop, [&] {
        return ok(gp::dispatch(args, workspace, ws_bytes, nullptr), "dispatch");
      }));
      if (span.back() < 0) return 1;
      cudaMemcpyFromSymbol(map[rep], gp::g_trace, sizeof(Marks));
      cudaMemcpyFromSymbol(scan[rep], gp::g_trace_scan, sizeof(ScanMarks));
      cudaMemcpyFromSymbol(corr[rep], gp::g_trace_correct, sizeof(CorrectMarks));
#if defined(GDN_TRACE_HAS_SMID)
      cudaMemcpyFromSymbol(map_smid[rep], gp::g_trace_smid, sizeof(map_smid[rep]));
      cudaMemcpyFromSymbol(scan_smid[rep], gp::g_trace_scan_smid, sizeof(scan_smid[rep]));
#endif
    }
    std::vector<double> sorted = span;
    std::sort(sorted.begin(), sorted.end());
    const int rep = static_cast<int>(std::find(span.begin(), span.end(), sorted[kReps / 2]) -
                                     span.begin());
    // Marks exist for the first kTraceCtas CTAs of a grid only: say how many correction CTAs
    // (the last ones in the folder's order) the groups' numbers leave out.
    const int64_t tiles = groups >= 2 ? gp::small_correct_tiles(tokens, groups) : 0;
    const int64_t correct_grid = seqs * gp::kVHeads * (groups - 1) * tiles;
    const int64_t untraced = std::max<int64_t>(0, correct_grid - gp::kTraceCtas);
    if (untraced > 0)
      std::fprintf(stderr, "%s: %lld correction CTAs past the %d traced ones\n", c.name,
                   static_cast<long long>(untraced), gp::kTraceCtas);
    std::printf("  {\"case\": \"%s\", \"groups_per_sequence\": %d, \"event_span_us\": %.2f, "
                "\"untraced_correction_ctas\": %lld,\n",
                c.name, groups, span[rep], static_cast<long long>(untraced));
    if (groups >= 2)
#if defined(GDN_TRACE_HAS_SMID)
      print_call(c, groups, tiles, map[rep], scan[rep], corr[rep], map_smid[rep], scan_smid[rep]);
#else
      print_call(c, groups, tiles, map[rep], scan[rep], corr[rep], nullptr, nullptr);
#endif
    else
      std::printf("   \"sequences\": []");
    std::printf("}%s\n", ci + 1 < cases.size() ? "," : "");
  }
  std::printf("], \"format\": \"walks[g] = [zero walk, identity walk] flag set (median over "
              "heads); walks_last[g] = the same, last head; map_entry = [first, median, last]; "
              "scan_heads[h] = [last entry, last step end] of head h's scan CTAs; "
              "scan_entry = [first, median, last]; scan_steps[s] = [median, last] step "
              "end; correction[g] = [first start, last end]; correction_ctas[g - 1] = [median "
              "start, last start, median time, longest time] of its CTAs; "
              "untraced_correction_ctas: correction CTAs past the first kTraceCtas, which leave "
              "no marks\"}\n");
  return 0;
}
