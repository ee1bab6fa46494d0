#include "kh/gpu/ceilings_probe.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "kh/core/error.h"
#include "kh/gpu/call_timer.h"
#include "kh/gpu/cuda/lt_gemm.h"
#include "kh/gpu/cuda/probe_kernels.h"

namespace kh {
namespace {

constexpr TimingConfig kProbeTiming{3, 20, 1};
constexpr TimingConfig kSlowProbeTiming{1, 5, 1};  // the gather chain runs for milliseconds
// Buffer sizes copied (bytes moved = 2x). The large ones find the peak; the small ones are what a
// memory-bound call of that many bytes can hope for at best (launch, first-load latency and ramp
// included), the honest floor for decode-sized calls: a GDN decode step moves 1 MiB per batch row.
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kCopySizes[] = {kMiB / 2, kMiB,     2 * kMiB,   4 * kMiB,  8 * kMiB,
                                      16 * kMiB, 32 * kMiB, 64 * kMiB, 256 * kMiB, 1024 * kMiB};
constexpr std::size_t kGatherEntries = std::size_t{1} << 24;  // 64 MiB: beyond the L2
constexpr int kGatherHops = 20000;
constexpr int kGemmSize = 8192;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("kh ceilings: {} failed: {}", what, cudaGetErrorString(e));
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&p, bytes), "allocation"); }
  ~DeviceBuffer() { cudaFree(p); }
};

class Prober {
 public:
  Prober(int device, cudaStream_t stream) : timer_(device, stream) {}

  const DeviceEnvironment& environment() const { return timer_.environment(); }

  /// Median seconds of `call` under cupti, or events if CUPTI cannot be used here.
  double median(const TimingConfig& config, const std::function<int(std::string&)>& call) {
    TrialTiming t;
    if (method_ == TimingMethod::kCupti) {
      try {
        t = timer_.time_trial(method_, config, call);
      } catch (const Error& e) {
        cupti_error_ = e.what();
        method_ = TimingMethod::kEvents;
      }
    }
    if (method_ == TimingMethod::kEvents) t = timer_.time_trial(method_, config, call);
    return median_of_samples(t);
  }
  /// Median seconds of `call` under one given method (no fallback).
  double median_with(TimingMethod method, const TimingConfig& config,
                     const std::function<int(std::string&)>& call) {
    return median_of_samples(timer_.time_trial(method, config, call));
  }
  TimingMethod method() const { return method_; }
  const std::string& cupti_error() const { return cupti_error_; }

 private:
  static double median_of_samples(const TrialTiming& t) {
    if (!t.ok()) fail("kh ceilings: a probe failed: {}", t.error);
    std::vector<double> s;
    for (const auto& sample : t.samples) s.push_back(sample.seconds);
    return median_of(s);
  }

  CallTimer timer_;
  TimingMethod method_ = TimingMethod::kCupti;
  std::string cupti_error_;
};

// A random single cycle through every entry (Sattolo's algorithm): a chain never repeats early.
std::vector<std::uint32_t> gather_cycle() {
  std::vector<std::uint32_t> next(kGatherEntries);
  std::iota(next.begin(), next.end(), 0u);
  std::mt19937_64 rng(20260501);
  for (std::size_t i = kGatherEntries - 1; i > 0; --i)
    std::swap(next[i], next[std::uniform_int_distribution<std::size_t>(0, i - 1)(rng)]);
  return next;
}

}  // namespace

CeilingsReport measure_ceilings(int device,
                                const std::function<void(const std::string&)>& progress) {
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  Prober prober(device, stream);
  CeilingsReport report;
  MachineCeilings& c = report.ceilings;
  c.gpu = prober.environment().gpu;
  Json copies = Json::array();

  progress("copy bandwidth");
  for (std::size_t bytes : kCopySizes) {
    DeviceBuffer src(bytes), dst(bytes);
    check(cudaMemset(src.p, 1, bytes), "memset");
    const double kernel = prober.median(kProbeTiming, [&](std::string&) {
      probe::launch_copy(dst.p, src.p, bytes, stream);
      return static_cast<int>(cudaGetLastError());
    });
    const double memcpy = prober.median(kProbeTiming, [&](std::string&) {
      return static_cast<int>(
          cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, stream));
    });
    const double moved = 2.0 * static_cast<double>(bytes);  // read + write
    c.copy_bytes_per_second = std::max({c.copy_bytes_per_second, moved / kernel, moved / memcpy});
    copies.push_back({{"bytes", bytes},
                      {"kernel_seconds", kernel},
                      {"memcpy_seconds", memcpy},
                      {"kernel_bytes_per_second", moved / kernel},
                      {"memcpy_bytes_per_second", moved / memcpy}});
  }

  progress("empty kernel");
  const auto empty = [&](std::string&) {
    probe::launch_empty(stream);
    return static_cast<int>(cudaGetLastError());
  };
  c.empty_kernel_seconds = prober.median(kProbeTiming, empty);
  // The harness's own floor under each timing method: what timing an empty call reports.
  Json harness_floor = Json::object();
  for (TimingMethod m : {TimingMethod::kCupti, TimingMethod::kEvents, TimingMethod::kGraph}) {
    if (m == TimingMethod::kCupti && prober.method() != TimingMethod::kCupti) continue;
    harness_floor[std::string(timing_method_name(m))] = prober.median_with(m, kProbeTiming, empty);
  }

  progress("dependent gather");
  {
    const std::vector<std::uint32_t> cycle = gather_cycle();
    DeviceBuffer table(cycle.size() * sizeof(std::uint32_t)), end(sizeof(std::uint32_t));
    check(cudaMemcpy(table.p, cycle.data(), cycle.size() * sizeof(std::uint32_t),
                     cudaMemcpyHostToDevice),
          "upload");
    const double chain = prober.median(kSlowProbeTiming, [&](std::string&) {
      probe::launch_gather_chain(static_cast<const std::uint32_t*>(table.p), kGatherHops,
                                 static_cast<std::uint32_t*>(end.p), stream);
      return static_cast<int>(cudaGetLastError());
    });
    c.gather_latency_seconds = chain / kGatherHops;
  }

  progress("fp32 FMA rate");
  {
    DeviceBuffer sink(sizeof(float));
    double flops = 0;
    const double seconds = prober.median(kProbeTiming, [&](std::string&) {
      flops = probe::launch_fma(static_cast<float*>(sink.p), prober.environment().sm_count, stream);
      return static_cast<int>(cudaGetLastError());
    });
    c.fp32_flops_per_second = flops / seconds;
  }

  Json gemms = Json::object();
  for (auto precision : {GemmPrecision::kBf16, GemmPrecision::kFp8}) {
    const char* name = precision == GemmPrecision::kBf16 ? "bf16" : "fp8";
    progress(fmt::format("{} GEMM (cuBLASLt)", name));
    LtGemm gemm(precision, kGemmSize, kGemmSize, kGemmSize, stream);
    const double seconds =
        prober.median(kProbeTiming, [&](std::string& why) { return gemm.run(why); });
    (precision == GemmPrecision::kBf16 ? c.bf16_flops_per_second : c.fp8_flops_per_second) =
        gemm.flops() / seconds;
    gemms[name] = {{"m", kGemmSize}, {"n", kGemmSize}, {"k", kGemmSize}, {"seconds", seconds}};
  }

  report.details = {{"method", timing_method_name(prober.method())},
                    {"cupti_error", prober.cupti_error()},
                    {"environment", device_environment_json(prober.environment())},
                    {"harness_floor_seconds", harness_floor},
                    {"copies", copies},
                    {"gemms", gemms},
                    {"gather", {{"entries", kGatherEntries}, {"hops", kGatherHops}}}};
  cudaStreamDestroy(stream);
  return report;
}

}  // namespace kh
