// The tensors of one candidate call in the backend's memory, each inside a guarded allocation:
// red zones filled with a canary pattern before and after the data, so a write past either end
// is seen after the call. Scalars stay 0-d host tensors; an absent optional input is a tensor
// with a null data pointer. Addresses stay fixed for the life of the object, so a second call on
// new inputs (anti-caching) sees the same pointers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "kh/gen/draw_recipe.h"
#include "kh/gen/input_set.h"
#include "kh/run/memory_backend.h"
#include "kh/spec/definition.h"

namespace kh {

/// Bytes of red zone on each side of every buffer (a multiple of the 256-byte alignment). Under
/// compute-sanitizer buffers get none: an out-of-bounds read must leave the allocation for
/// memcheck to see it.
inline constexpr std::size_t kRedZoneBytes = 512;
inline constexpr unsigned char kCanaryByte = 0xA5;

/// Inputs drawn where they live (on the device) instead of uploaded: input name -> recipe.
using DeviceDraws = std::map<std::string, DrawRecipe>;

class CallBuffers {
 public:
  /// Allocates the inputs and fills them: those named in `device_draws` are drawn in the
  /// backend's memory (the host tensors of those are placeholders), the others uploaded. Then
  /// allocates the outputs (uninitialised) and a workspace (sized later with set_workspace).
  CallBuffers(MemoryBackend& backend, const Definition& def, const AxisValues& axes,
              const InputSet& inputs, std::size_t red_zone_bytes = kRedZoneBytes,
              const DeviceDraws& device_draws = {});
  ~CallBuffers();
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;

  /// Inputs in definition order, then outputs: what the entry point receives.
  const std::vector<DLTensor>& tensors() const { return tensors_; }
  void set_workspace(std::uint64_t bytes);
  void* workspace() const;
  std::uint64_t workspace_bytes() const { return workspace_bytes_; }

  /// Fills every output with a value no correct candidate leaves behind (NaN for floats, 0x7F
  /// bytes for integers: an out-of-range index).
  void poison_outputs();
  /// The digest of every output where it lives, in definition order: equal digests after two
  /// calls mean the same bits (up to a 2^-64 chance), without bringing the outputs to the host.
  std::vector<std::uint64_t> output_digests() const;
  /// Overwrites the inputs in place (same addresses) with new values of the same shapes.
  void reupload_inputs(const InputSet& inputs, const DeviceDraws& device_draws = {});
  /// The first inputs().size() tensors: the inputs in definition order.
  std::size_t input_count() const { return input_buffer_.size(); }
  /// A copy of an input's current contents in host memory.
  HostTensor download_input(const std::string& name) const;
  /// The name of the first buffer whose red zone changed and on which side, or nullopt.
  std::optional<std::string> damaged_red_zone() const;
  /// Where an input differs from `expected` ("input 'v' at [0, 0, 3, 5]"), or nullopt. Inputs
  /// drawn on the device are compared with the digest taken after drawing them.
  std::optional<std::string> modified_input(const InputSet& expected) const;
  OutputSet download_outputs() const;

 private:
  struct Buffer {
    std::string name;
    void* base = nullptr;  // start of the front red zone
    std::size_t bytes = 0;
    Shape shape;
    DType dtype = DType::kFloat32;
    bool is_output = false;
    std::size_t red_zone = 0;
    void* data() const { return static_cast<char*>(base) + red_zone; }
  };
  Buffer allocate(const std::string& name, DType dtype, const Shape& shape, bool is_output);
  void fill_input(std::size_t i, const HostTensor* host, const DeviceDraws& device_draws);
  /// Every input buffer's digest now, by name, in one pass where they live.
  std::map<std::string, std::uint64_t> current_input_digests() const;

  MemoryBackend& backend_;
  std::size_t red_zone_;
  std::vector<Buffer> buffers_;      // device buffers (non-scalar inputs, outputs, workspace)
  std::vector<Shape> shapes_;        // backing storage for the DLTensors' shape arrays
  std::vector<HostTensor> scalars_;  // host copies the scalar DLTensors point into
  std::vector<DLTensor> tensors_;
  std::vector<std::size_t> input_buffer_;  // per input: index into buffers_ or SIZE_MAX
  std::vector<std::string> input_names_;   // per input, in definition order
  // Every input buffer's digest once filled, taken where it lives: after the call, an unchanged
  // digest clears the input without bringing it back to the host (34 MB per call for GDN prefill
  // at 8192 tokens); a changed one is located by a byte comparison, or, for an input drawn on
  // the device (no host copy), reported as changed.
  std::map<std::string, std::uint64_t> input_digests_;
  std::set<std::string> drawn_;  // inputs drawn on the device
  std::optional<Buffer> workspace_;
  std::uint64_t workspace_bytes_ = 0;
};

}  // namespace kh
