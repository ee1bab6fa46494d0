// Where a candidate's tensors live and how the harness reaches them: host memory for the cpu
// backend, device memory (and a stream) for the cuda backend. The trial procedure is written once
// against this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "kh/check/element_screen.h"
#include "kh/core/dtype.h"
#include "kh/core/error.h"
#include "kh/run/byte_range.h"

namespace kh {

/// An error of the device itself (a failed allocation, copy or launch, a sticky CUDA error). It
/// is the candidate's doing or the machine's, never the inputs': the worker reports it as a
/// RUNTIME_ERROR and is replaced, since a CUDA context that saw a sticky error is unusable.
class DeviceError : public Error {
 public:
  using Error::Error;
};

class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;

  virtual std::string name() const = 0;
  virtual DLDevice device() const = 0;
  /// The stream handed to candidates (cudaStream_t, or null on the host).
  virtual void* stream() = 0;

  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(void* dst, std::size_t bytes) = 0;
  /// Fills `bytes` bytes at `dst` with `pattern` (`pattern_bytes` of 1, 2, 4 or 8) repeated.
  virtual void fill(void* dst, std::size_t bytes, const void* pattern,
                    std::size_t pattern_bytes) = 0;
  /// The digest (core/digest.h) of each range, computed where they live, in one pass.
  virtual std::vector<std::uint64_t> digests(const std::vector<ByteRange>& ranges) = 0;
  /// The index of the first range holding a byte other than `value` (a red zone written into),
  /// or nullopt; one pass over all of them.
  virtual std::optional<std::size_t> first_changed_range(const std::vector<ByteRange>& ranges,
                                                         unsigned char value) = 0;
  /// The element rule's screen (element_screen.h) of `numel` elements of two tensors of `dtype`,
  /// computed where they live; nullopt where that saves nothing over the host check (host
  /// memory) or the dtype is not one the backend screens.
  virtual std::optional<ElementScreen> screen(const void* solution, const void* reference,
                                              DType dtype, std::int64_t numel, float atol,
                                              float rtol) = 0;
  /// Waits for the candidate's work; throws DeviceError carrying the device's error if any.
  virtual void synchronize() = 0;
};

std::unique_ptr<MemoryBackend> make_cpu_backend();
/// The cuda backend on one device; an error if kh was built without CUDA or no device is usable.
std::unique_ptr<MemoryBackend> make_cuda_backend(int device);
/// CUDA devices this process can see (CUDA_VISIBLE_DEVICES applies); 0 without a driver or
/// without CUDA support in this build. Creates no context.
int visible_cuda_devices();
/// The name of CUDA device `device` as timing environments record it ("NVIDIA H200"), or "" when
/// it cannot be read. Used to find per-GPU records (noise floors) before a worker starts.
std::string cuda_device_name(int device);

}  // namespace kh
