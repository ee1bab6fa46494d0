// The SM clock and clock event (throttle) reasons of one GPU, read through NVML loaded with
// dlopen (the toolkit ships no nvml.h, and kh links no driver library): the few entry points
// used are declared here. Reading is optional: without NVML every reading is "unknown" (0).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace kh {

struct ClockReading {
  double sm_clock_mhz = 0;             // 0 when unknown
  std::uint64_t throttle_reasons = 0;  // NVML clock event reasons (sample_stats.h)
};

class NvmlClocks {
 public:
  /// Opens NVML for the GPU at this PCI bus id ("0000:17:00.0", from cudaDeviceGetPCIBusId).
  /// Never throws: available() says whether readings are real, why_unavailable() why not.
  explicit NvmlClocks(const std::string& pci_bus_id);
  ~NvmlClocks();
  NvmlClocks(const NvmlClocks&) = delete;
  NvmlClocks& operator=(const NvmlClocks&) = delete;

  bool available() const;
  const std::string& why_unavailable() const;
  ClockReading read() const;
  /// The display driver's release, e.g. "580.159.04" (empty when NVML cannot say).
  const std::string& driver_release() const;
  /// The maximum SM clock (0 when unknown).
  double max_sm_clock_mhz() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kh
