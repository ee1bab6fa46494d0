#include "kh/run/call_buffers.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kh/check/check_result.h"
#include "kh/core/error.h"
#include "kh/gen/device_fill.h"

namespace kh {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// One element's poison bytes, little-endian.
std::vector<unsigned char> poison_element(DType t) {
  switch (t) {
    case DType::kFloat64:
      return {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
    case DType::kFloat32:
      return {0, 0, 0xc0, 0x7f};
    case DType::kFloat16:
      return {0x00, 0x7e};
    case DType::kBFloat16:
      return {0xc0, 0x7f};
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
      return {0x7f};
    default:  // integers and bool: 0x7F bytes, e.g. int32 2139062143, never a valid index
      return std::vector<unsigned char>(dtype_size(t), 0x7f);
  }
}

}  // namespace

CallBuffers::Buffer CallBuffers::allocate(const std::string& name, DType dtype, const Shape& shape,
                                          bool is_output) {
  Buffer b;
  b.name = name;
  b.dtype = dtype;
  b.shape = shape;
  b.is_output = is_output;
  b.bytes = storage_bytes(dtype, shape_numel(shape));
  b.red_zone = red_zone_;
  b.base = backend_.allocate(b.bytes + 2 * red_zone_);
  if (red_zone_) {
    backend_.fill(b.base, red_zone_, &kCanaryByte, 1);
    backend_.fill(static_cast<char*>(b.data()) + b.bytes, red_zone_, &kCanaryByte, 1);
  }
  return b;
}

CallBuffers::CallBuffers(MemoryBackend& backend, const Definition& def, const AxisValues& axes,
                         const InputSet& inputs, std::size_t red_zone_bytes,
                         const DeviceDraws& device_draws)
    : backend_(backend), red_zone_(red_zone_bytes) {
  const std::size_t count = def.inputs.size() + def.outputs.size();
  shapes_.reserve(count);
  scalars_.reserve(def.inputs.size());
  for (const auto& decl : def.inputs) {
    input_names_.push_back(decl.name);
    const HostTensor* host = inputs.find(decl.name);
    shapes_.push_back(def.shape_of(decl, axes));
    DLTensor t{};
    t.ndim = static_cast<std::int32_t>(shapes_.back().size());
    t.shape = shapes_.back().data();
    t.dtype = dlpack_dtype(decl.dtype);
    if (decl.is_scalar()) {
      scalars_.push_back(host ? host->clone() : HostTensor(decl.dtype, {}));
      t.data = host ? scalars_.back().bytes() : nullptr;
      t.device = {kDLCPU, 0};
      input_buffer_.push_back(kNone);
    } else if (!host) {  // an absent optional input
      t.data = nullptr;
      t.device = backend_.device();
      input_buffer_.push_back(kNone);
    } else {
      buffers_.push_back(allocate(decl.name, decl.dtype, shapes_.back(), false));
      t.data = buffers_.back().data();
      t.device = backend_.device();
      input_buffer_.push_back(buffers_.size() - 1);
    }
    tensors_.push_back(t);
  }
  for (std::size_t i = 0; i < input_buffer_.size(); ++i)
    fill_input(i, inputs.find(def.inputs[i].name), device_draws);
  input_digests_ = current_input_digests();
  for (const auto& decl : def.outputs) {
    shapes_.push_back(def.shape_of(decl, axes));
    buffers_.push_back(allocate(decl.name, decl.dtype, shapes_.back(), true));
    DLTensor t{};
    t.ndim = static_cast<std::int32_t>(shapes_.back().size());
    t.shape = shapes_.back().data();
    t.dtype = dlpack_dtype(decl.dtype);
    t.data = buffers_.back().data();
    t.device = backend_.device();
    tensors_.push_back(t);
  }
}

CallBuffers::~CallBuffers() {
  for (auto& b : buffers_) backend_.release(b.base);
  if (workspace_) backend_.release(workspace_->base);
}

void CallBuffers::set_workspace(std::uint64_t bytes) {
  if (workspace_) backend_.release(workspace_->base);
  workspace_.reset();
  workspace_bytes_ = bytes;
  if (bytes)
    workspace_ = allocate("workspace", DType::kUInt8, {static_cast<std::int64_t>(bytes)}, true);
}

void* CallBuffers::workspace() const {
  return workspace_ ? workspace_->data() : nullptr;
}

void CallBuffers::poison_outputs() {
  for (auto& b : buffers_) {
    if (!b.is_output || b.bytes == 0) continue;
    const auto element = poison_element(b.dtype);
    backend_.fill(b.data(), b.bytes, element.data(), element.size());
  }
  // The fill is asynchronous on the harness's stream; a candidate may launch on another (a
  // Python entry's own stream), so the poison must be in place before the call starts.
  backend_.synchronize();
}

std::vector<std::uint64_t> CallBuffers::output_digests() const {
  std::vector<ByteRange> ranges;
  for (const auto& b : buffers_)
    if (b.is_output) ranges.push_back({b.data(), b.bytes});
  return backend_.digests(ranges);
}

std::map<std::string, std::uint64_t> CallBuffers::current_input_digests() const {
  std::vector<ByteRange> ranges;
  std::vector<const Buffer*> inputs;
  for (const std::size_t i : input_buffer_) {
    if (i == kNone) continue;
    ranges.push_back({buffers_[i].data(), buffers_[i].bytes});
    inputs.push_back(&buffers_[i]);
  }
  const std::vector<std::uint64_t> sums = backend_.digests(ranges);
  std::map<std::string, std::uint64_t> digests;
  for (std::size_t i = 0; i < inputs.size(); ++i) digests[inputs[i]->name] = sums.at(i);
  return digests;
}

void CallBuffers::fill_input(std::size_t i, const HostTensor* host,
                             const DeviceDraws& device_draws) {
  if (input_buffer_[i] == kNone) {
    if (tensors_[i].device.device_type == kDLCPU && tensors_[i].data && host)
      std::memcpy(tensors_[i].data, host->bytes(), host->nbytes());  // a scalar
    return;
  }
  const Buffer& b = buffers_[input_buffer_[i]];
  if (auto draw = device_draws.find(b.name); draw != device_draws.end()) {
    if (backend_.device().device_type != kDLCUDA)
      fail("input '{}': the {} backend cannot draw inputs in its memory", b.name, backend_.name());
    draw_on_device(draw->second, b.data(), b.dtype, shape_numel(b.shape), backend_.stream());
    drawn_.insert(b.name);
    return;
  }
  if (!host || host->nbytes() != b.bytes)
    fail("input '{}': the values do not fit its buffer ({} bytes)", b.name, b.bytes);
  backend_.upload(b.data(), host->bytes(), b.bytes);
  drawn_.erase(b.name);
}

void CallBuffers::reupload_inputs(const InputSet& inputs, const DeviceDraws& device_draws) {
  input_digests_.clear();
  drawn_.clear();
  for (std::size_t i = 0; i < input_buffer_.size(); ++i)
    fill_input(i, inputs.find(inputs[i].name), device_draws);
  input_digests_ = current_input_digests();
}

HostTensor CallBuffers::download_input(const std::string& name) const {
  for (std::size_t i = 0; i < input_buffer_.size(); ++i) {
    if (input_buffer_[i] == kNone || buffers_[input_buffer_[i]].name != name) continue;
    const Buffer& b = buffers_[input_buffer_[i]];
    HostTensor t(b.dtype, b.shape);
    backend_.download(t.bytes(), b.data(), b.bytes);
    return t;
  }
  fail("no input buffer named '{}'", name);
}

std::optional<std::string> CallBuffers::damaged_red_zone() const {
  if (!red_zone_) return std::nullopt;
  // Both zones of every buffer in one pass; only a changed one comes to the host, to be located.
  struct Zone {
    const Buffer* buffer;
    bool after;  // the zone past the end of the data
  };
  std::vector<Zone> zones;
  std::vector<ByteRange> ranges;
  auto add = [&](const Buffer& b) {
    for (const bool after : {false, true}) {
      zones.push_back({&b, after});
      ranges.push_back({after ? static_cast<const char*>(b.data()) + b.bytes : b.base, red_zone_});
    }
  };
  for (const auto& b : buffers_) add(b);
  if (workspace_) add(*workspace_);
  const auto changed = backend_.first_changed_range(ranges, kCanaryByte);
  if (!changed) return std::nullopt;
  const Zone& z = zones.at(*changed);
  std::vector<unsigned char> zone(red_zone_);
  backend_.download(zone.data(), ranges[*changed].data, red_zone_);
  // The first changed byte in address order: after the data, the one nearest it; before the
  // data, the one farthest from it (how far a write below the start reached).
  std::size_t distance = 0;
  for (std::size_t i = 0; i < red_zone_; ++i) {
    if (zone[i] == kCanaryByte) continue;
    distance = z.after ? i : red_zone_ - i - 1;
    break;
  }
  return fmt::format("wrote {} {} '{}': its red zone changed {} byte{} {} the data",
                     z.after ? "past the end of" : "before the start of",
                     z.buffer->is_output ? "output" : "input", z.buffer->name, distance,
                     distance == 1 ? "" : "s", z.after ? "after the end of" : "before");
}

std::optional<std::string> CallBuffers::modified_input(const InputSet& expected) const {
  const std::map<std::string, std::uint64_t> now_digests = current_input_digests();
  for (std::size_t i = 0; i < input_buffer_.size(); ++i) {
    if (input_buffer_[i] == kNone) {
      // A scalar lives in host memory the candidate can write too, and the reference reads it
      // after the call.
      const HostTensor* want = expected.find(input_names_[i]);
      if (tensors_[i].device.device_type == kDLCPU && tensors_[i].data && want &&
          std::memcmp(tensors_[i].data, want->bytes(), want->nbytes()) != 0)
        return fmt::format("modified input '{}' (a scalar)", input_names_[i]);
      continue;
    }
    const Buffer& b = buffers_[input_buffer_[i]];
    if (auto known = input_digests_.find(b.name); known != input_digests_.end()) {
      if (now_digests.at(b.name) == known->second) continue;
      if (drawn_.count(b.name))
        return fmt::format("modified input '{}' (its digest changed during the call)", b.name);
    }
    const HostTensor& want = expected[i].tensor;
    HostTensor now(b.dtype, b.shape);
    backend_.download(now.bytes(), b.data(), b.bytes);
    if (std::memcmp(now.bytes(), want.bytes(), b.bytes) == 0) continue;
    const std::size_t element = dtype_size(b.dtype);
    std::size_t first = 0;
    while (first < b.bytes && now.bytes()[first] == want.bytes()[first]) ++first;
    return fmt::format("modified input '{}' at {}", b.name,
                       index_string(b.shape, static_cast<std::int64_t>(first / element)));
  }
  return std::nullopt;
}

OutputSet CallBuffers::download_outputs() const {
  OutputSet out;
  for (const auto& b : buffers_) {
    if (!b.is_output) continue;
    HostTensor t(b.dtype, b.shape);
    backend_.download(t.bytes(), b.data(), b.bytes);
    out.add(b.name, std::move(t));
  }
  return out;
}

}  // namespace kh
