#include "kh/gpu/nvml_clocks.h"

#include <dlfcn.h>

namespace kh {
namespace {

// The NVML declarations used (nvml.h, stable ABI since NVML 5).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlClockSm = 1;  // NVML_CLOCK_SM
using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using HandleByPciFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using ClockFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, unsigned*);
using ReasonsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using DriverVersionFn = nvmlReturn_t (*)(char*, unsigned);
constexpr unsigned kDriverVersionLength = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

}  // namespace

struct NvmlClocks::Impl {
  void* handle = nullptr;
  nvmlDevice_t device = nullptr;
  ShutdownFn shutdown = nullptr;
  ClockFn clock = nullptr;
  ClockFn max_clock = nullptr;
  ReasonsFn reasons = nullptr;
  std::string why;
  std::string driver_release;
};

NvmlClocks::NvmlClocks(const std::string& pci_bus_id) : impl_(std::make_unique<Impl>()) {
  Impl& n = *impl_;
  n.handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n.handle) {
    n.why = "libnvidia-ml.so.1 not found";
    return;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(n.handle, "nvmlInit_v2"));
  auto by_pci =
      reinterpret_cast<HandleByPciFn>(dlsym(n.handle, "nvmlDeviceGetHandleByPciBusId_v2"));
  n.shutdown = reinterpret_cast<ShutdownFn>(dlsym(n.handle, "nvmlShutdown"));
  n.clock = reinterpret_cast<ClockFn>(dlsym(n.handle, "nvmlDeviceGetClockInfo"));
  n.max_clock = reinterpret_cast<ClockFn>(dlsym(n.handle, "nvmlDeviceGetMaxClockInfo"));
  // Renamed in NVML 12.2 (same bits); older drivers only have the first name.
  n.reasons =
      reinterpret_cast<ReasonsFn>(dlsym(n.handle, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!n.reasons)
    n.reasons =
        reinterpret_cast<ReasonsFn>(dlsym(n.handle, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  if (!init || !by_pci || !n.shutdown || !n.clock || !n.reasons) {
    n.why = "libnvidia-ml.so.1 lacks an entry point kh uses";
    n.shutdown = nullptr;
    return;
  }
  if (init() != kNvmlSuccess) {
    n.why = "nvmlInit failed";
    n.shutdown = nullptr;
    return;
  }
  if (auto driver =
          reinterpret_cast<DriverVersionFn>(dlsym(n.handle, "nvmlSystemGetDriverVersion"))) {
    char text[kDriverVersionLength] = {};
    if (driver(text, kDriverVersionLength) == kNvmlSuccess) n.driver_release = text;
  }
  if (by_pci(pci_bus_id.c_str(), &n.device) != kNvmlSuccess) {
    n.why = "NVML does not know the GPU at PCI bus id " + pci_bus_id;
    n.device = nullptr;
  }
}

NvmlClocks::~NvmlClocks() {
  if (impl_->shutdown) impl_->shutdown();
}

bool NvmlClocks::available() const {
  return impl_->device != nullptr;
}

const std::string& NvmlClocks::driver_release() const {
  return impl_->driver_release;
}

const std::string& NvmlClocks::why_unavailable() const {
  return impl_->why;
}

ClockReading NvmlClocks::read() const {
  ClockReading r;
  if (!available()) return r;
  unsigned mhz = 0;
  if (impl_->clock(impl_->device, kNvmlClockSm, &mhz) == kNvmlSuccess) r.sm_clock_mhz = mhz;
  unsigned long long reasons = 0;
  if (impl_->reasons(impl_->device, &reasons) == kNvmlSuccess) r.throttle_reasons = reasons;
  return r;
}

double NvmlClocks::max_sm_clock_mhz() const {
  unsigned mhz = 0;
  if (available() && impl_->max_clock &&
      impl_->max_clock(impl_->device, kNvmlClockSm, &mhz) == kNvmlSuccess)
    return mhz;
  return 0;
}

}  // namespace kh
