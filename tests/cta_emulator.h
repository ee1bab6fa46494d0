// Runs a kernel's per-CTA program on the host, one fiber per CUDA thread, so kernels can be
// checked against the CPU references on machines without a GPU. Two ways in:
// - a program written against a `Cta` object (thread(), sync(), shfl_xor(), smem; e.g.
//   kernels/gdn_prefill/token_serial_cta.h) gets an EmulatedCta;
// - a CUDA kernel body compiled for the host with tests/cuda_on_host.h, which maps threadIdx,
//   __syncthreads, the shuffles and the warp-collective PTX (mma, ldmatrix) onto the running
//   fiber's EmulatedCta::current(), and with tests/wgmma_on_host.h for Hopper's warpgroup MMA.
//
// The fibers of a CTA run one at a time, each up to its next barrier. There are two kinds, as on
// the device: the CTA barrier (sync, __syncthreads) waits for every thread of the CTA that has
// not exited, a warp barrier (sync_warp, and inside every lane exchange) for the 32 lanes of one
// warp, so warps drift apart between CTA barriers. Two properties make it a test and not only a
// simulator:
// - barriers must match: a warp whose lanes wait at different kinds of barrier or at warp
//   barriers of different counts, or a thread that exits while others wait, is an error
//   (undefined behaviour on the device), and so is a CTA where no barrier can complete;
// - warps, and lanes within a warp, run in ascending or descending order (Order), so a value read
//   across warps without a CTA barrier between the write and the read, or across lanes without a
//   warp barrier, differs between the two orders: a caller that runs both and compares outputs
//   bit for bit catches missing barriers.
// A third kind of wait serves barriers a kernel builds itself in shared memory (the phases of an
// mbarrier, a flag): a thread that finds its condition unmet calls yield() and is run again, to
// check once more, after the other warps have run; whatever changes such a condition calls
// progress(). A round of the warps in which nothing progressed while a thread still waits is a
// deadlock, reported as an error (a wait loop that itself passes a warp barrier, a shuffle say,
// counts as progress every round: such a deadlock hangs instead).
// Warps can be made to lag (set_lagging_warps), and a kernel's host branch may defer its
// asynchronous copies until its thread waits for them (async_open, async_committed).
// Shared memory is filled with 0xff bytes before each run (NaN as floats and bf16), so a read of
// what no thread wrote shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace kh::test {

class CtaEmulator;

/// What a per-CTA program sees of its thread and CTA.
class EmulatedCta {
 public:
  static constexpr std::size_t kSlotBytes = 64;  // the most a lane publishes at once

  unsigned char* smem = nullptr;  // the CTA's shared memory (16-byte aligned)
  std::size_t smem_bytes = 0;
  int thread() const { return thread_; }
  int lane() const { return thread_ % 32; }
  std::int64_t block() const;
  /// The CTA barrier.
  void sync();
  /// The warp barrier.
  void sync_warp();
  /// Gives way: the thread waits on a condition the other threads change (its caller checks it
  /// again when this returns). Threads that yield are run again after the other warps.
  void yield();
  /// Tells the emulator that a condition some thread may wait on has changed (an arrival on a
  /// barrier in shared memory); without it a round where only yields happen is a deadlock.
  void progress();
  /// An event the hardware performs on its own some time later (an mbarrier arrival made when a
  /// thread's cp.async copies land): `fn(arg)` runs from the scheduler, once every thread is
  /// waiting, the latest deferred first, so such arrivals on one barrier or on several come in
  /// the order PTX leaves free, the reverse of their issue. fn must not wait or yield.
  void defer(void (*fn)(void*), void* arg);
  float shfl_xor(float x, int lane_mask);

  /// Warp-collective exchange: publish(v) makes v visible to the warp's lanes (a warp barrier),
  /// peer<T>(l) reads lane l's published value, done() ends the exchange (a warp barrier).
  template <class T>
  void publish(const T& v) {
    static_assert(sizeof(T) <= kSlotBytes, "publish at most kSlotBytes");
    std::memcpy(slot(thread_), &v, sizeof(T));
    sync_warp();
  }
  template <class T>
  T peer(int lane) const {
    T v;
    std::memcpy(&v, slot(thread_ / 32 * 32 + lane), sizeof(T));
    return v;
  }
  void done() { sync_warp(); }

  /// The fiber running now; an error outside CtaEmulator::run.
  static EmulatedCta& current();

  /// Asynchronous copies into shared memory this thread has issued and not yet waited for
  /// (cuda_on_host.cpp's host form of cp.async, for kernels that defer them): the open group and
  /// the committed ones, oldest first. They land when the thread waits for them; a run starts
  /// with none, and the ones a thread never waited for land when it exits.
  struct AsyncCopy {
    unsigned char* dst;
    const unsigned char* src;  // null: zeros
    int bytes;
  };
  std::vector<AsyncCopy> async_open;
  std::vector<std::vector<AsyncCopy>> async_committed;
  /// Lands the committed groups but the newest `pending`, or (all) every copy issued.
  void land_async_copies(int pending);
  void land_all_async_copies();

  /// Warpgroup MMAs this thread has issued and not yet waited for (wgmma_on_host.cpp): the open
  /// group's and the committed groups', oldest first. Each keeps its accumulators' input and the
  /// result computed at issue; `compute` reads the shared-memory operands again when the thread
  /// waits. A run starts with none; a thread that exits with any is an error.
  struct PendingMma {
    float* d;
    std::vector<float> in, out;
    std::function<void(const float* in, float* out)> compute;
  };
  std::vector<PendingMma> mma_open;
  std::vector<std::vector<PendingMma>> mma_committed;
  /// Warpgroup-collective instructions this thread executed, one signature each (its shape and
  /// shared-memory descriptors): at the end of a run the 128 threads of each warpgroup must show
  /// the same list, as `.sync.aligned` demands (a warp that skips one hangs or corrupts the
  /// device's MMA).
  std::vector<uint64_t> warpgroup_log;

 private:
  friend class CtaEmulator;
  unsigned char* slot(int thread) const;
  CtaEmulator* emulator_ = nullptr;
  int thread_ = 0;
};

class CtaEmulator {
 public:
  enum class Order { ascending, descending };

  /// A CTA of `threads` threads (a multiple of 32) with `shared_bytes` of shared memory, at
  /// `shared` if given (a kernel's `extern __shared__` array compiled for the host is one buffer).
  CtaEmulator(int threads, std::size_t shared_bytes, Order order = Order::ascending,
              unsigned char* shared = nullptr);
  ~CtaEmulator();
  CtaEmulator(const CtaEmulator&) = delete;
  CtaEmulator& operator=(const CtaEmulator&) = delete;

  /// Runs `program` as every thread of CTA `block` to the end; rethrows what a thread threw, and
  /// throws kh::Error on mismatched barriers or a deadlock.
  void run(const std::function<void(EmulatedCta&)>& program, std::int64_t block = 0);

  /// CTA barriers every thread of the last run passed.
  std::int64_t barriers() const { return barriers_; }

  /// Warps (bit w: warp w) that lag: in each round they run only if the other warps made no
  /// progress, so the others run ahead as far as their waits allow. A producer that does not wait
  /// for its consumers to free a buffer overwrites it when its consumers lag; a consumer that does
  /// not wait for its producer reads what is not yet written when the producer lags.
  void set_lagging_warps(std::uint64_t mask) { lagging_ = mask; }

  /// With `on`, a warp whose lanes have all met at a warp barrier (__syncwarp, a shuffle) stops
  /// there for the round, so warps running the same code interleave at every warp barrier: two
  /// warps of one role writing the same shared scratch overwrite each other's values between a
  /// write and its read. Off (the default), a warp runs as far as its waits on others allow.
  void set_switch_at_warp_barriers(bool on) { switch_at_warp_barriers_ = on; }

 private:
  friend class EmulatedCta;
  struct Fibers;
  enum class Wait { none, cta, warp, spin };
  void wait(int thread, Wait kind);
  void run_warp(int warp);
  void release_cta_barrier();
  void check_warpgroup_logs() const;

  int threads_;
  Order order_;
  std::unique_ptr<Fibers> fibers_;
  std::int64_t barriers_ = 0;
  std::int64_t block_ = 0;
  std::int64_t events_ = 0;  // progress: arrivals, barriers released, threads ended
  std::uint64_t lagging_ = 0;
  bool switch_at_warp_barriers_ = false;
  std::vector<std::pair<void (*)(void*), void*>> deferred_;  // EmulatedCta::defer, oldest first
};

}  // namespace kh::test
