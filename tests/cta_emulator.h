// Runs a kernel's per-CTA program on the host, one fiber per CUDA thread, so kernels written
// against a `Cta` object (thread(), sync(), shfl_xor(), smem; e.g.
// candidates/gdn_prefill/token_serial_cta.h) can be checked against the CPU
// references on machines without a GPU.
//
// The fibers of a CTA run one at a time, each up to its next barrier; a lane exchange is two
// barriers (write your value, barrier, read your partner's, barrier). Two properties make it a
// test and not only a simulator:
// - every thread must reach the same barriers in the same order: a thread that finishes while
//   another waits, or threads waiting at different barrier counts, is an error (divergent
//   barriers are undefined behaviour on the device);
// - the fibers run in ascending or descending thread order (Order), so a value read across
//   threads without a barrier between the write and the read differs between the two orders: a
//   caller that runs both and compares outputs bit for bit catches missing barriers.
// What it cannot see: a lane exchange is a CTA-wide barrier here, so a shuffle executed by only
// some lanes of a warp (divergence the device leaves undefined), or a race between warps that
// only shuffles separate (warps drift apart on the device, never here), passes. Programs should
// keep shuffles out of thread-dependent branches and separate cross-warp shared-memory traffic by
// sync().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace kh::test {

class CtaEmulator;

/// What a per-CTA program sees of its thread and CTA.
class EmulatedCta {
 public:
  unsigned char* smem = nullptr;  // the CTA's shared memory (16-byte aligned, 0xff bytes per run)
  int thread() const { return thread_; }
  void sync();
  float shfl_xor(float x, int lane_mask);

 private:
  friend class CtaEmulator;
  CtaEmulator* emulator_ = nullptr;
  int thread_ = 0;
};

class CtaEmulator {
 public:
  enum class Order { ascending, descending };

  /// A CTA of `threads` threads (a multiple of 32) with `shared_bytes` of shared memory.
  CtaEmulator(int threads, std::size_t shared_bytes, Order order = Order::ascending);
  ~CtaEmulator();
  CtaEmulator(const CtaEmulator&) = delete;
  CtaEmulator& operator=(const CtaEmulator&) = delete;

  /// Runs `program` as every thread of one CTA, to the end; rethrows what a thread threw, and
  /// throws kh::Error on divergent barriers.
  void run(const std::function<void(EmulatedCta&)>& program);

  /// Barriers every thread of the last run passed.
  std::int64_t barriers() const { return barriers_; }

 private:
  friend class EmulatedCta;
  struct Fibers;
  void wait_at_barrier(int thread);
  float exchange(int thread, float x, int lane_mask);

  int threads_;
  Order order_;
  std::unique_ptr<Fibers> fibers_;
  std::int64_t barriers_ = 0;
};

}  // namespace kh::test
