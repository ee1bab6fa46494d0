// Micro-benchmark: the GDN prefill context-parallel scan alone (small_chunk_scan.cuh of the folder
// on the include path), checked against an fp64 recurrence on the host and timed at 2, 4 and 8
// groups for one and two sequences (mean over kReps back-to-back launches, the workspace in L2 as
// after the map pass): the slope is the step. Built once per folder (run_gdn_scan.sh), so a
// candidate's scan and the library's run on the same inputs. Earlier forms of this file: probes
// of the scan loop of 6ccd14d30333 and clustered forms (before d16583b,
// bench/results/2026-12-04_gdn_prefill_scan_micro_h200.json), then tf32 wgmma forms in clusters
// exchanging E rows each step (commit d16583b as gdn_wgmma_scan.cu,
// bench/results/2026-12-06_gdn_prefill_wgmma_scan_micro_h100.json: 3.2-3.9 us a step on one H100
// against the mma.sync scan's 4.4; the products were not the limit).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "micro_common.cuh"
#include "small_chunk_scan.cuh"

namespace {

using micro::ok;
using namespace khk::gdn_prefill;

constexpr int kReps = 200;
constexpr int kD = kHeadSize;
// The scan's inputs, from host arrays per head:
// e1 [v][k], b[step] [v][n], a[step] [k][n].
struct Problem {
  int heads, groups;
  std::vector<float> e1, b, a;
  int steps() const { return groups - 1; }
};

Problem make_problem(int heads, int groups, unsigned seed) {
  Problem p{heads, groups, {}, {}, {}};
  const size_t mat = size_t{kD} * kD;
  p.e1.resize(heads * mat);
  p.b.resize(heads * p.steps() * mat);
  p.a.resize(heads * p.steps() * mat);
  unsigned x = seed;
  auto next = [&] {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
  };
  for (auto& v : p.e1) v = next();
  for (auto& v : p.b) v = next();
  for (auto& v : p.a) v = next() * 0.15f;  // about 1 / sqrt(128) a term: products stay bounded
  return p;
}

// The fp64 recurrence: E_2 .. E_G per head, [head][step][v][n].
std::vector<double> reference(const Problem& p) {
  const size_t mat = size_t{kD} * kD;
  std::vector<double> out(p.heads * p.steps() * mat), e(mat), next(mat);
  for (int h = 0; h < p.heads; ++h) {
    for (size_t i = 0; i < mat; ++i) e[i] = p.e1[h * mat + i];
    for (int st = 0; st < p.steps(); ++st) {
      const float* a = &p.a[(size_t(h) * p.steps() + st) * mat];
      const float* b = &p.b[(size_t(h) * p.steps() + st) * mat];
      for (int v = 0; v < kD; ++v)
        for (int n = 0; n < kD; ++n) {
          double sum = b[v * kD + n];
          for (int k = 0; k < kD; ++k) sum += e[v * kD + k] * a[k * kD + n];
          next[v * kD + n] = sum;
        }
      e.swap(next);
      for (size_t i = 0; i < mat; ++i) out[(size_t(h) * p.steps() + st) * mat + i] = e[i];
    }
  }
  return out;
}

struct Device {
  float *workspace = nullptr, *state = nullptr;
};

// The problem into the workspace: E_1 and the B_g as exits, the A_g as maps, every walk done.
bool upload(const Problem& p, int num_seqs, const Device& d) {
  const size_t mat = size_t{kD} * kD;
  const SmallGroupSpace space{d.workspace, p.groups, num_seqs, 0};
  std::vector<float> ws(SmallGroupSpace::floats(num_seqs, p.groups, 0), 0.0f);
  const auto at = [&](const void* in_space) {
    return static_cast<size_t>(static_cast<const float*>(in_space) - d.workspace);
  };
  for (int h = 0; h < p.heads; ++h) {
    std::memcpy(&ws[at(space.exit(h, 0))], &p.e1[h * mat], mat * 4);
    for (int st = 0; st < p.steps(); ++st) {
      std::memcpy(&ws[at(space.exit(h, st + 1))], &p.b[(size_t(h) * p.steps() + st) * mat],
                  mat * 4);
      const float* a = &p.a[(size_t(h) * p.steps() + st) * mat];
#if defined(GDN_SCAN_MAP_KMAJOR)  // A^T in the wgmma operand layout, with its tf32 remainders
      for (int k = 0; k < kD; ++k)
        for (int n = 0; n < kD; ++n) {
          const float x = a[k * kD + n];
          uint32_t bits;
          std::memcpy(&bits, &x, 4);
          bits &= 0xffffe000u;
          float hi;
          std::memcpy(&hi, &bits, 4);
          ws[at(space.map(h, st)) + kmajor_offset(n, k)] = x;
          ws[at(space.map_lo(h, st)) + kmajor_offset(n, k)] = x - hi;
        }
#else
      std::memcpy(&ws[at(space.map(h, st))], a, mat * 4);
#endif
    }
    for (int w = 0; w < 2 * p.groups - 1; ++w) {
      const int one = 1;
      std::memcpy(&ws[at(space.walk_done(h, w))], &one, 4);
    }
  }
  return ok(cudaMemcpy(d.workspace, ws.data(), ws.size() * 4, cudaMemcpyHostToDevice), "ws");
}

void launch(const Problem& p, int num_seqs, const Device& d) {
  const SmallGroupSpace space{d.workspace, p.groups, num_seqs, 0};
  small_cp_scan_kernel<<<static_cast<unsigned>(p.heads * kScanCtasPerHead), kScanThreadsPerCta,
                         sizeof(SmallScanSmem)>>>(space, d.state);
}

// Worst |got - want| over E_2 .. E_G (E_2 .. E_{G-1} over the B_g in the workspace, E_G in the
// state), relative to the largest |want|; negative where the launch failed.
double check(const Problem& p, int num_seqs, const Device& d) {
  const size_t mat = size_t{kD} * kD;
  if (!upload(p, num_seqs, d)) return -1.0;
  launch(p, num_seqs, d);
  if (!ok(cudaDeviceSynchronize(), "scan")) return -1.0;
  const std::vector<double> want = reference(p);
  std::vector<float> got(want.size());
  const SmallGroupSpace space{d.workspace, p.groups, num_seqs, 0};
  for (int h = 0; h < p.heads; ++h)
    for (int st = 0; st < p.steps(); ++st) {
      const float* from = st + 1 < p.steps() ? space.exit(h, st + 1) : d.state + h * mat;
      cudaMemcpy(&got[(size_t(h) * p.steps() + st) * mat], from, mat * 4, cudaMemcpyDeviceToHost);
    }
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::fmax(scale, std::fabs(want[i]));
    const double diff = std::fabs(want[i] - got[i]);
    worst = diff > worst || diff != diff ? diff : worst;
  }
  return worst / scale;
}

}  // namespace

int main(int argc, char** argv) {
  const char* folder = argc > 1 ? argv[1] : "folder";
  constexpr int kMaxSeqs = 2, kMaxGroups = 8;
  Device d;
  if (!ok(cudaMalloc(&d.workspace, SmallGroupSpace::floats(kMaxSeqs, kMaxGroups, 0) * 4),
          "cudaMalloc") ||
      !ok(cudaMalloc(&d.state, size_t{kMaxSeqs} * kVHeads * kStateFloats * 4), "cudaMalloc") ||
      !ok(cudaFuncSetAttribute(small_cp_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               sizeof(SmallScanSmem)),
          "smem"))
    return 1;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const double error = check(make_problem(kMaxSeqs * kVHeads, kMaxGroups, 7u), kMaxSeqs, d);
  std::printf("{\"folder\": \"%s\", \"gpu\": \"%s\", \"reps\": %d, \"unit\": \"us per launch "
              "(mean of back-to-back launches)\", \"ctas_per_head\": %d, \"threads\": %d, "
              "\"smem_bytes\": %d,\n \"worst_relative_error_vs_fp64\": %.3g, \"cases\": [",
              folder, prop.name, kReps, kScanCtasPerHead, kScanThreadsPerCta,
              static_cast<int>(sizeof(SmallScanSmem)), error);
  const int shapes[][2] = {{1, 2}, {1, 4}, {1, 8}, {2, 2}, {2, 4}, {2, 8}};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
    const Problem p = make_problem(shapes[i][0] * kVHeads, shapes[i][1], 11u);
    if (!upload(p, shapes[i][0], d)) return 1;
    const double us = micro::mean_launch_us(kReps, [&] { launch(p, shapes[i][0], d); });
    if (!ok(cudaDeviceSynchronize(), "timing")) return 1;
    std::printf("%s\n  {\"seqs\": %d, \"groups\": %d, \"us\": %.3f}", i ? "," : "", shapes[i][0],
                shapes[i][1], us);
  }
  std::printf("\n]}\n");
  return error >= 0.0 && error < 1e-5 ? 0 : 2;
}
