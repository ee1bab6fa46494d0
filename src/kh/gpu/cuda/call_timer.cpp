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
  // Each method times `calls` in `order` after `warmup` untimed calls of each; one result per
  // call. time_trial is the case of one call timed config.iterations times.
  using Results = std::vector<TrialTiming>;
  Results events(int warmup, const std::vector<Call>& calls, const std::vector<int>& order);
  Results graph(int warmup, const std::vector<Call>& calls, const std::vector<int>& order);
  Results cupti(int warmup, const std::vector<Call>& calls, const std::vector<int>& order);
  // Every call's untimed calls, in warmup_order; the first failure, if any.
  std::optional<std::string> untimed_all(int warmup, const std::vector<Call>& calls,
                                         const std::vector<int>& order) {
    for (std::size_t c : warmup_order(calls.size(), order))
      if (auto e = untimed(kOfficialPreWarmupCalls + warmup, calls[c])) return e;
    return std::nullopt;
  }
  static Results failed(std::size_t n, const std::string& error) {
    return Results(n, TrialTiming{{}, error, {}});
  }
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
  return time_interleaved(method, config.warmup, {call},
                          std::vector<int>(static_cast<std::size_t>(config.iterations), 0))[0];
}

std::vector<TrialTiming> CallTimer::time_interleaved(TimingMethod method, int warmup,
                                                     const std::vector<Call>& calls,
                                                     const std::vector<int>& order) {
  if (calls.empty()) fail("timer: no call to time");
  if (warmup < 0) fail("timer: warmup {} is negative", warmup);
  for (int i : order)
    if (i < 0 || static_cast<std::size_t>(i) >= calls.size())
      fail("timer: order names call {} of {}", i, calls.size());
  switch (method) {
    case TimingMethod::kEvents:
      return impl_->events(warmup, calls, order);
    case TimingMethod::kGraph:
      return impl_->graph(warmup, calls, order);
    case TimingMethod::kCupti:
      return impl_->cupti(warmup, calls, order);
    case TimingMethod::kWall:
      fail(
          "timer: the wall timer is the cpu backend's; the cuda backend times with cupti, events "
          "or graph");
  }
  fail("unknown timing method");
}

CallTimer::Impl::Results CallTimer::Impl::events(int warmup, const std::vector<Call>& calls,
                                                 const std::vector<int>& order) {
  Results r(calls.size());
  if (auto e = untimed_all(warmup, calls, order)) return failed(calls.size(), *e);
  EventPair ev;
  for (int c : order) {
    flush();
    std::string why;
    check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
    const int rc = calls[c](why);
    check(cudaEventRecord(ev.end, stream), "cudaEventRecord");
    if (rc)
      return failed(calls.size(), fmt::format("the entry point returned status {}: {}", rc, why));
    r[c].samples.push_back(sample(ev.seconds()));
  }
  return r;
}

CallTimer::Impl::Results CallTimer::Impl::graph(int warmup, const std::vector<Call>& calls,
                                                const std::vector<int>& order) {
  // One graph per call, captured once; replays follow `order` after each graph's untimed replays.
  std::vector<cudaGraphExec_t> execs;
  auto destroy = [&] {
    for (auto e : execs) cudaGraphExecDestroy(e);
  };
  for (const auto& call : calls) {
    // One eager call first: a call's first run may compile, autotune or allocate (Triton and
    // PyTorch candidates do), and none of that can happen inside a capture. It is what a
    // serving engine does before capturing, too.
    if (auto e = untimed(1, call)) return failed(calls.size(), *e);
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    std::string why;
    const int rc = call(why);
    const cudaError_t captured = cudaStreamEndCapture(stream, &graph);
    if (rc || captured != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();  // capture errors are not sticky
      destroy();
      return failed(
          calls.size(),
          rc ? fmt::format("the entry point returned status {} during graph capture: {}", rc, why)
             : fmt::format("the call cannot be captured in a CUDA graph: {} (does it "
                           "synchronise, allocate, or use another stream?)",
                           cudaGetErrorString(captured)));
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
      destroy();
      return failed(calls.size(), fmt::format("the captured graph cannot be instantiated: {}",
                                              cudaGetErrorString(made)));
    }
    execs.push_back(exec);
  }
  EventPair ev;
  auto replay = [&](cudaGraphExec_t exec) {
    flush();
    check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaEventRecord(ev.end, stream), "cudaEventRecord");
    return ev.seconds();
  };
  for (std::size_t c : warmup_order(execs.size(), order))
    for (int i = 0; i < kOfficialPreWarmupCalls + warmup; ++i) replay(execs[c]);
  Results r(calls.size());
  for (int c : order) r[c].samples.push_back(sample(replay(execs[c])));
  destroy();
  return r;
}

CallTimer::Impl::Results CallTimer::Impl::cupti(int warmup, const std::vector<Call>& calls,
                                                const std::vector<int>& order) {
  if (!tracer) tracer = std::make_unique<CuptiTracer>();
  if (auto e = untimed_all(warmup, calls, order)) return failed(calls.size(), *e);
  std::vector<std::vector<HostWindow>> windows(calls.size());
  std::vector<std::vector<ClockReading>> readings(calls.size());
  std::string failure;
  tracer->start();
  for (std::size_t i = 0; i < order.size() && failure.empty(); ++i) {
    const int c = order[i];
    flush();
    std::string why;
    const std::uint64_t t0 = tracer->timestamp();
    const int rc = calls[c](why);
    const std::uint64_t t1 = tracer->timestamp();
    if (rc) failure = fmt::format("the entry point returned status {}: {}", rc, why);
    const cudaError_t synced = cudaStreamSynchronize(stream);
    if (synced != cudaSuccess) {
      tracer->stop();
      check(synced, "a timed call");
    }
    windows[c].push_back({t0, t1});
    readings[c].push_back(clocks->read());
  }
  const TraceRecords records = tracer->stop();
  if (!failure.empty()) return failed(calls.size(), failure);
  Results r(calls.size());
  for (std::size_t c = 0; c < calls.size(); ++c) {
    if (windows[c].empty()) continue;
    const TimedSpansResult spans =
        timed_iteration_spans(records.api, records.activities, windows[c]);
    if (!spans.ok())
      return failed(calls.size(),
                    calls.size() == 1 ? spans.error : fmt::format("call {}: {}", c, spans.error));
    for (std::size_t i = 0; i < spans.seconds.size(); ++i)
      r[c].samples.push_back(make_timing_sample(spans.seconds[i], readings[c][i].sm_clock_mhz,
                                                readings[c][i].throttle_reasons));
    r[c].last_call = window_activities(records.api, records.activities, windows[c].back());
  }
  return r;
}

}  // namespace kh
