// The cpu backend: candidates' tensors in host memory, calls synchronous.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kh/core/digest.h"
#include "kh/core/error.h"
#include "kh/run/memory_backend.h"

namespace kh {
namespace {

// Same alignment as cudaMalloc gives, so host candidates may use aligned vector loads.
constexpr std::size_t kAlignment = 256;

class CpuBackend final : public MemoryBackend {
 public:
  std::string name() const override { return "cpu"; }
  DLDevice device() const override { return {kDLCPU, 0}; }
  void* stream() override { return nullptr; }

  void* allocate(std::size_t bytes) override {
    void* p = std::aligned_alloc(kAlignment,
                                 (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment);
    if (!p) fail("cpu backend: out of host memory allocating {} bytes", bytes);
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void zero(void* dst, std::size_t bytes) override { std::memset(dst, 0, bytes); }
  void fill(void* dst, std::size_t bytes, const void* pattern, std::size_t pattern_bytes) override {
    // The pattern, then the filled prefix copied onto the rest, doubling each time (a byte loop
    // costs ~0.1 s on a 32 MB GDN state).
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t filled = std::min(pattern_bytes, bytes);
    std::memcpy(out, pattern, filled);
    while (filled < bytes) {
      const std::size_t n = std::min(filled, bytes - filled);
      std::memcpy(out + filled, out, n);
      filled += n;
    }
  }
  std::vector<std::uint64_t> digests(const std::vector<ByteRange>& ranges) override {
    std::vector<std::uint64_t> sums;
    for (const ByteRange& r : ranges) {
      std::uint64_t sum = 0;
      for (std::size_t i = 0; i < (r.bytes + 7) / 8; ++i)
        sum += digest_term(digest_word(static_cast<const unsigned char*>(r.data), r.bytes, i), i);
      sums.push_back(sum);
    }
    return sums;
  }
  std::optional<std::size_t> first_changed_range(const std::vector<ByteRange>& ranges,
                                                 unsigned char value) override {
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const auto* p = static_cast<const unsigned char*>(ranges[i].data);
      if (std::any_of(p, p + ranges[i].bytes, [&](unsigned char b) { return b != value; }))
        return i;
    }
    return std::nullopt;
  }
  // Host memory: the host check reads the tensors where they are, so a screen saves nothing.
  std::optional<ElementScreen> screen(const void*, const void*, DType, std::int64_t, float,
                                      float) override {
    return std::nullopt;
  }
  void synchronize() override {}
};

}  // namespace

std::unique_ptr<MemoryBackend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace kh
