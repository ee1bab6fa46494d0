// Test doubles of a memory backend: one that forwards every call to the cpu backend, for tests
// to override the calls they watch or replace, and the element rule's screen computed on the host
// element by element (what any backend's screen must return).
#pragma once

#include <cmath>
#include <memory>

#include "kh/check/element_rule.h"
#include "kh/run/memory_backend.h"

namespace kh::test {

class ForwardingBackend : public MemoryBackend {
 public:
  std::string name() const override { return inner_->name(); }
  DLDevice device() const override { return inner_->device(); }
  void* stream() override { return inner_->stream(); }
  void* allocate(std::size_t bytes) override { return inner_->allocate(bytes); }
  void release(void* p) override { inner_->release(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    inner_->upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    inner_->download(dst, src, bytes);
  }
  void zero(void* dst, std::size_t bytes) override { inner_->zero(dst, bytes); }
  void fill(void* dst, std::size_t bytes, const void* pattern, std::size_t n) override {
    inner_->fill(dst, bytes, pattern, n);
  }
  std::vector<std::uint64_t> digests(const std::vector<ByteRange>& ranges) override {
    return inner_->digests(ranges);
  }
  std::optional<std::size_t> first_changed_range(const std::vector<ByteRange>& ranges,
                                                 unsigned char value) override {
    return inner_->first_changed_range(ranges, value);
  }
  std::optional<ElementScreen> screen(const void* solution, const void* reference, DType dtype,
                                      std::int64_t numel, float atol, float rtol) override {
    return inner_->screen(solution, reference, dtype, numel, atol, rtol);
  }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::unique_ptr<MemoryBackend> inner_ = make_cpu_backend();
};

/// The screen of `numel` element pairs, `at(i)` giving element i's (solution, reference) as
/// float32, with check_tensor's comparison (compare_element) and its NaN rules for the maxima.
template <class At>
ElementScreen host_element_screen(std::int64_t numel, float atol, float rtol, At at) {
  ElementScreen s;
  const Tolerance tolerance{atol, rtol, 1.0};
  for (std::int64_t i = 0; i < numel; ++i) {
    const auto [x, y] = at(i);
    s.non_finite |= !std::isfinite(x);
    const ElementComparison c = compare_element(x, y, tolerance);
    s.fails += c.fails;
    if (!std::isnan(c.abs_error))
      s.max_absolute_error = std::max(s.max_absolute_error, c.abs_error);
    if (!std::isnan(c.rel_error))
      s.max_relative_error = std::max(s.max_relative_error, c.rel_error);
  }
  return s;
}

}  // namespace kh::test
