#include "kh/gpu/call_timer.h"

#include <cuda_runtime_api.h>

#include <optional>

#include "kh/core/error.h"
#include "kh/gpu/cupti_tracer.h"
#include "kh/gpu/nvml_clocks.h"
#include "kh/run/memory_backend.h"

namespace kh {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw DeviceError(
        fmt::format("timer: {} failed: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

// The nvcc that built kh's device code (set by src/CMakeLists.txt at configure time).
std::string compiler_version() {
#if defined(KH_NVCC_VERSION)
  return fmt::format("nvcc {}", KH_NVCC_VERSION);
#else
  return fmt::format("nvcc unknown (CUDA runtime headers {})", CUDART_VERSION);
#endif
}

// Start and end events of one timed call.
struct EventPair {
  cudaEvent_t start = nullptr, end = nullptr;
  EventPair() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&end), "cudaEventCreate");
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(end);
  }
  double seconds() const {
    check(cudaEventSynchronize(end), "the timed call");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
};

}  // namespace

Json device_environment_json(const DeviceEnvironment& e) {
  return {{"gpu", e.gpu},
          {"sm_count", e.sm_count},
          {"l2_bytes", e.l2_bytes},
          {"pci_bus_id", e.pci_bus_id},
          {"driver_version", e.driver_version},
          {"driver_release", e.driver_release},
          {"runtime_version", e.runtime_version},
          {"compiler", e.compiler},
          {"max_sm_clock_mhz", e.max_sm_clock_mhz},
          {"clocks_available", e.clocks_available}};
}

struct CallTimer::Impl {
  cudaStream_t stream = nullptr;
  void* flush_buffer = nullptr;
  std::size_t flush_bytes = 0;
  DeviceEnvironment env;
  std::unique_ptr<NvmlClocks> clocks;
  std::unique_ptr<CuptiTracer> tracer;  // created on first cupti use

  // The official cold-L2 step: zero 2x L2 bytes, then synchronise, before each call.
  void flush() {
    check(cudaMemsetAsync(flush_buffer, 0, flush_bytes, stream), "L2 flush");
    check(cudaStreamSynchronize(stream), "L2 flush");
  }
  TimingSample sample(double seconds) const {
    const ClockReading c = clocks->read();
    return make_timing_sample(seconds, c.sm_clock_mhz, c.throttle_reasons);
  }
  // Untimed calls; the first failing status ends them with its message.
  std::optional<std::string> untimed(int n, const Call& call) {
    for (int i = 0; i < n; ++i) {
      flush();
      std::string why;
      if (int rc = call(why)) return fmt::format("the entry point returned status {}: {}", rc, why);
      check(cudaStreamSynchronize(stream), "an untimed call");
    }
    return std::nullopt;
  }
  TrialTiming events(const TimingConfig& c, const Call& call);
  TrialTiming graph(const TimingConfig& c, const Call& call);
  TrialTiming cupti(const TimingConfig& c, const Call& call);
};

CallTimer::CallTimer(int device, void* cuda_stream) : impl_(std::make_unique<Impl>()) {
  Impl& t = *impl_;
  t.stream = static_cast<cudaStream_t>(cuda_stream);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  char bus[32] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "cudaDeviceGetPCIBusId");
  t.env.gpu = prop.name;
  t.env.sm_count = prop.multiProcessorCount;
  t.env.l2_bytes = prop.l2CacheSize;
  t.env.pci_bus_id = bus;
  check(cudaDriverGetVersion(&t.env.driver_version), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&t.env.runtime_version), "cudaRuntimeGetVersion");
  t.env.compiler = compiler_version();
  t.clocks = std::make_unique<NvmlClocks>(t.env.pci_bus_id);
  t.env.clocks_available = t.clocks->available();
  t.env.driver_release = t.clocks->driver_release();
  t.env.max_sm_clock_mhz = t.clocks->max_sm_clock_mhz();
  t.flush_bytes = 2 * static_cast<std::size_t>(prop.l2CacheSize);
  check(cudaMalloc(&t.flush_buffer, t.flush_bytes), "flush buffer allocation");
}

CallTimer::~CallTimer() {
  cudaFree(impl_->flush_buffer);
}

const DeviceEnvironment& CallTimer::environment() const {
  return impl_->env;
}

TrialTiming CallTimer::time_trial(TimingMethod method, const TimingConfig& config,
                                  const Call& call) {
  check_timing_config(config);
  switch (method) {
    case TimingMethod::kEvents:
      return impl_->events(config, call);
    case TimingMethod::kGraph:
      return impl_->graph(config, call);
    case TimingMethod::kCupti:
      return impl_->cupti(config, call);
  }
  fail("unknown timing method");
}

TrialTiming CallTimer::Impl::events(const TimingConfig& c, const Call& call) {
  TrialTiming r;
  if (auto e = untimed(kOfficialPreWarmupCalls + c.warmup, call)) return {{}, *e};
  EventPair ev;
  for (int i = 0; i < c.iterations; ++i) {
    flush();
    std::string why;
    check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
    const int rc = call(why);
    check(cudaEventRecord(ev.end, stream), "cudaEventRecord");
    if (rc) return {{}, fmt::format("the entry point returned status {}: {}", rc, why)};
    r.samples.push_back(sample(ev.seconds()));
  }
  return r;
}

TrialTiming CallTimer::Impl::graph(const TimingConfig& c, const Call& call) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  std::string why;
  const int rc = call(why);
  const cudaError_t captured = cudaStreamEndCapture(stream, &graph);
  if (rc || captured != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // capture errors are not sticky
    return {{},
            rc ? fmt::format("the entry point returned status {} during graph capture: {}", rc, why)
               : fmt::format("the call cannot be captured in a CUDA graph: {} (does it "
                             "synchronise, allocate, or use another stream?)",
                             cudaGetErrorString(captured))};
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess)
    return {{},
            fmt::format("the captured graph cannot be instantiated: {}", cudaGetErrorString(made))};
  TrialTiming r;
  EventPair ev;
  for (int i = 0; i < kOfficialPreWarmupCalls + c.warmup + c.iterations; ++i) {
    flush();
    check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaEventRecord(ev.end, stream), "cudaEventRecord");
    const double seconds = ev.seconds();
    if (i >= kOfficialPreWarmupCalls + c.warmup) r.samples.push_back(sample(seconds));
  }
  cudaGraphExecDestroy(exec);
  return r;
}

TrialTiming CallTimer::Impl::cupti(const TimingConfig& c, const Call& call) {
  if (!tracer) tracer = std::make_unique<CuptiTracer>();
  if (auto e = untimed(kOfficialPreWarmupCalls + c.warmup, call)) return {{}, *e};
  std::vector<HostWindow> windows;
  std::vector<ClockReading> readings;
  std::string failure;
  tracer->start();
  for (int i = 0; i < c.iterations && failure.empty(); ++i) {
    flush();
    std::string why;
    const std::uint64_t t0 = tracer->timestamp();
    const int rc = call(why);
    const std::uint64_t t1 = tracer->timestamp();
    if (rc) failure = fmt::format("the entry point returned status {}: {}", rc, why);
    const cudaError_t synced = cudaStreamSynchronize(stream);
    if (synced != cudaSuccess) {
      tracer->stop();
      check(synced, "a timed call");
    }
    windows.push_back({t0, t1});
    readings.push_back(clocks->read());
  }
  const TraceRecords records = tracer->stop();
  if (!failure.empty()) return {{}, failure};
  const TimedSpansResult spans = timed_iteration_spans(records.api, records.activities, windows);
  if (!spans.ok()) return {{}, spans.error};
  TrialTiming r;
  for (std::size_t i = 0; i < spans.seconds.size(); ++i)
    r.samples.push_back(make_timing_sample(spans.seconds[i], readings[i].sm_clock_mhz,
                                           readings[i].throttle_reasons));
  return r;
}

}  // namespace kh
