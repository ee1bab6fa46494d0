#include "cta_emulator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "fiber_context.h"
#include "kh/core/error.h"

namespace kh::test {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;  // per fiber: a kernel's locals, with room
constexpr int kWarpSize = 32;
constexpr unsigned char kSharedPoison = 0xff;  // reads of unwritten shared memory give NaNs

thread_local CtaEmulator* t_running = nullptr;
thread_local EmulatedCta* t_current = nullptr;

}  // namespace

struct CtaEmulator::Fibers {
  struct Fiber {
    FiberContext context;
    std::unique_ptr<unsigned char[]> stack;
    EmulatedCta cta;
    Wait waiting = Wait::none;       // what it is blocked on (none: runnable or done)
    std::int64_t warp_barriers = 0;  // warp barriers passed, to match a warp's lanes
    bool done = false;
  };
  FiberContext scheduler;
  std::vector<Fiber> fiber;
  std::vector<unsigned char> slots;  // kSlotBytes per thread, for publish / peer
  std::unique_ptr<unsigned char, decltype(&std::free)> owned{nullptr, &std::free};
  unsigned char* shared = nullptr;
  std::size_t shared_bytes = 0;
  const std::function<void(EmulatedCta&)>* program = nullptr;
  int current = 0;
  std::exception_ptr error;
};

std::int64_t EmulatedCta::block() const { return emulator_->block_; }

void EmulatedCta::sync() { emulator_->wait(thread_, CtaEmulator::Wait::cta); }

void EmulatedCta::sync_warp() { emulator_->wait(thread_, CtaEmulator::Wait::warp); }

namespace {
void land(const EmulatedCta::AsyncCopy& c) {
  if (c.src) std::memcpy(c.dst, c.src, static_cast<std::size_t>(c.bytes));
  else std::memset(c.dst, 0, static_cast<std::size_t>(c.bytes));
}
}  // namespace

// The copies a wait lands land last issued first: the hardware orders no two cp.async copies, so
// two pending copies to one address (a request overwriting another's destination without a wait
// between) leave the older one's bytes, and the tests see it.
void EmulatedCta::land_async_copies(int pending) {
  const std::size_t keep = pending < 0 ? 0 : static_cast<std::size_t>(pending);
  const std::size_t landed =
      async_committed.size() > keep ? async_committed.size() - keep : std::size_t{0};
  for (std::size_t g = landed; g-- > 0;)
    for (auto c = async_committed[g].rbegin(); c != async_committed[g].rend(); ++c) land(*c);
  async_committed.erase(async_committed.begin(),
                        async_committed.begin() + static_cast<std::ptrdiff_t>(landed));
}

void EmulatedCta::land_all_async_copies() {
  for (auto c = async_open.rbegin(); c != async_open.rend(); ++c) land(*c);
  async_open.clear();
  land_async_copies(0);
}

void EmulatedCta::yield() { emulator_->wait(thread_, CtaEmulator::Wait::spin); }

void EmulatedCta::progress() { ++emulator_->events_; }

void EmulatedCta::defer(void (*fn)(void*), void* arg) {
  emulator_->deferred_.emplace_back(fn, arg);
  ++emulator_->events_;
}

float EmulatedCta::shfl_xor(float x, int lane_mask) {
  if (lane_mask < 0 || lane_mask >= kWarpSize)
    throw Error(fmt::format("shfl_xor: lane mask {} outside the warp", lane_mask));
  publish(x);
  const float other = peer<float>(lane() ^ lane_mask);
  done();
  return other;
}

unsigned char* EmulatedCta::slot(int thread) const {
  return emulator_->fibers_->slots.data() + static_cast<std::size_t>(thread) * kSlotBytes;
}

EmulatedCta& EmulatedCta::current() {
  if (!t_current) throw Error("EmulatedCta::current(): no emulated CTA is running");
  return *t_current;
}

CtaEmulator::CtaEmulator(int threads, std::size_t shared_bytes, Order order, unsigned char* shared)
    : threads_(threads), order_(order), fibers_(std::make_unique<Fibers>()) {
  if (threads <= 0 || threads % kWarpSize != 0 || threads > 1024)
    throw Error(fmt::format("CtaEmulator: {} threads (expected a multiple of 32 up to 1024)",
                            threads));
  Fibers& fs = *fibers_;
  fs.fiber.resize(static_cast<std::size_t>(threads));
  fs.slots.resize(static_cast<std::size_t>(threads) * EmulatedCta::kSlotBytes);
  fs.shared_bytes = shared_bytes;
  if (shared) {
    fs.shared = shared;
  } else {
    fs.owned.reset(static_cast<unsigned char*>(
        std::aligned_alloc(16, (shared_bytes + 15) / 16 * 16 + 16)));
    fs.shared = fs.owned.get();
  }
  for (int t = 0; t < threads; ++t) {
    auto& f = fs.fiber[static_cast<std::size_t>(t)];
    f.stack = std::make_unique<unsigned char[]>(kStackBytes);
    f.cta.emulator_ = this;
    f.cta.thread_ = t;
    f.cta.smem = fs.shared;
    f.cta.smem_bytes = shared_bytes;
  }
}

CtaEmulator::~CtaEmulator() = default;

void CtaEmulator::wait(int thread, Wait kind) {
  auto& f = fibers_->fiber[static_cast<std::size_t>(thread)];
  f.waiting = kind;
  fiber_switch(f.context, fibers_->scheduler);
}

// Runs warp `w` as far as it goes before the CTA barrier: its runnable lanes in order (a lane
// that yielded gets one more look at its condition), then again each time all 32 wait at a warp
// barrier (with the same count), until every lane waits at the CTA barrier, has yielded, or has
// exited. Lanes split between the CTA barrier and a warp barrier, or between counts, are an error;
// so is a warp barrier some lanes exited before. Lanes at a warp barrier while others of the warp
// have yielded wait for them (the next round).
void CtaEmulator::run_warp(int w) {
  Fibers& fs = *fibers_;
  for (int l = 0; l < kWarpSize; ++l) {
    auto& f = fs.fiber[static_cast<std::size_t>(w * kWarpSize + l)];
    if (f.waiting == Wait::spin) f.waiting = Wait::none;
  }
  for (;;) {
    for (int i = 0; i < kWarpSize && !fs.error; ++i) {
      const int t = w * kWarpSize + (order_ == Order::ascending ? i : kWarpSize - 1 - i);
      auto& f = fs.fiber[static_cast<std::size_t>(t)];
      if (f.done || f.waiting != Wait::none) continue;
      fs.current = t;
      t_current = &f.cta;
      fiber_switch(fs.scheduler, f.context);
      t_current = nullptr;
      if (f.done) ++events_;
    }
    if (fs.error) return;
    int at_warp = 0, at_cta = 0, live = 0;
    std::int64_t count = -1;
    for (int l = 0; l < kWarpSize; ++l) {
      const auto& f = fs.fiber[static_cast<std::size_t>(w * kWarpSize + l)];
      if (f.done) continue;
      ++live;
      at_cta += f.waiting == Wait::cta;
      if (f.waiting != Wait::warp) continue;
      ++at_warp;
      if (count >= 0 && f.warp_barriers != count)
        throw Error(fmt::format("warp {}: lanes wait at warp barriers {} and {}", w, count,
                                f.warp_barriers));
      count = f.warp_barriers;
    }
    if (at_warp == 0) return;  // at the CTA barrier, yielded, or done
    if (at_cta > 0)
      throw Error(fmt::format("warp {}: {} of its {} live lanes wait at a warp barrier, {} at the "
                              "CTA barrier",
                              w, at_warp, live, at_cta));
    if (at_warp != live) return;  // the others yielded: the warp barrier waits for them
    if (live != kWarpSize)
      throw Error(fmt::format("warp {}: a warp barrier with {} of 32 lanes exited", w,
                              kWarpSize - live));
    for (int l = 0; l < kWarpSize; ++l) {
      auto& f = fs.fiber[static_cast<std::size_t>(w * kWarpSize + l)];
      f.waiting = Wait::none;
      ++f.warp_barriers;
    }
    ++events_;
    if (switch_at_warp_barriers_) return;  // the other warps' turn first
  }
}

// Every warp has run up to the CTA barrier: release it, or fail. A thread that exited while others
// wait is an error too: __syncthreads in code not every thread reaches is undefined behaviour,
// even where the hardware lets it pass.
void CtaEmulator::release_cta_barrier() {
  Fibers& fs = *fibers_;
  for (int t = 0; t < threads_; ++t) {
    const auto& f = fs.fiber[static_cast<std::size_t>(t)];
    if (f.done)
      throw Error(fmt::format("divergent barriers: thread {} exited while others wait at CTA "
                              "barrier {}",
                              t, barriers_ + 1));
  }
  for (auto& f : fs.fiber) f.waiting = Wait::none;
  ++barriers_;
}

void CtaEmulator::run(const std::function<void(EmulatedCta&)>& program, std::int64_t block) {
  Fibers& fs = *fibers_;
  fs.program = &program;
  fs.error = nullptr;
  block_ = block;
  std::memset(fs.shared, kSharedPoison, fs.shared_bytes);
  for (auto& f : fs.fiber) {
    f.waiting = Wait::none;
    f.warp_barriers = 0;
    f.done = false;
    f.cta.async_open.clear();
    f.cta.async_committed.clear();
    f.cta.mma_open.clear();
    f.cta.mma_committed.clear();
    f.cta.warpgroup_log.clear();
    fiber_prepare(f.context, f.stack.get(), kStackBytes, [] {
      CtaEmulator& e = *t_running;
      auto& me = e.fibers_->fiber[static_cast<std::size_t>(e.fibers_->current)];
      try {
        (*e.fibers_->program)(me.cta);
        me.cta.land_all_async_copies();  // on the device they land after the thread exits
        if (!me.cta.mma_open.empty() || !me.cta.mma_committed.empty())
          throw Error(fmt::format("thread {} exited with warpgroup MMAs it did not wait for",
                                  me.cta.thread()));
      } catch (...) {
        if (!e.fibers_->error) e.fibers_->error = std::current_exception();
      }
      me.done = true;
      fiber_switch(me.context, e.fibers_->scheduler);  // for good: a done fiber is not resumed
    });
  }
  CtaEmulator* const outer_emulator = t_running;
  EmulatedCta* const outer_cta = t_current;
  const auto restore = [&] {
    t_running = outer_emulator;
    t_current = outer_cta;
  };
  t_running = this;
  barriers_ = 0;
  try {
    events_ = 1;  // the start
    deferred_.clear();
    for (;;) {
      // Warps one after another, each as far as it goes: a value one warp reads of another's
      // writes without a CTA barrier between differs between the two orders.
      const std::int64_t events_before = events_;
      const int warps = threads_ / kWarpSize;
      for (const bool laggards : {false, true}) {
        if (laggards && (lagging_ == 0 || events_ != events_before)) break;
        for (int i = 0; i < warps && !fs.error; ++i) {
          const int w = order_ == Order::ascending ? i : warps - 1 - i;
          if (((lagging_ >> w & 1) != 0) == laggards) run_warp(w);
        }
      }
      if (fs.error) break;
      if (std::all_of(fs.fiber.begin(), fs.fiber.end(), [](const auto& f) { return f.done; }))
        break;
      const bool waiting = std::any_of(fs.fiber.begin(), fs.fiber.end(), [](const auto& f) {
        return !f.done && f.waiting != Wait::cta;
      });
      if (!waiting) {
        release_cta_barrier();
        ++events_;
      } else if (events_ == events_before && !deferred_.empty()) {
        const auto [fn, arg] = deferred_.back();  // the latest: see EmulatedCta::defer
        deferred_.pop_back();
        fn(arg);
        ++events_;
      } else if (events_ == events_before) {
        int spin = 0, cta = 0;
        for (const auto& f : fs.fiber) {
          spin += !f.done && f.waiting == Wait::spin;
          cta += !f.done && f.waiting == Wait::cta;
        }
        throw Error(fmt::format("deadlock: {} threads wait on conditions nothing changes, {} at "
                                "the CTA barrier",
                                spin, cta));
      }
    }
  } catch (...) {
    restore();
    throw;
  }
  restore();
  if (fs.error) std::rethrow_exception(fs.error);
  check_warpgroup_logs();
}

// Threads of one warpgroup (128 aligned threads) must have executed the same warpgroup-collective
// instructions in the same order.
void CtaEmulator::check_warpgroup_logs() const {
  constexpr int kWarpgroup = 4 * kWarpSize;
  const Fibers& fs = *fibers_;
  for (int first = 0; first < threads_; first += kWarpgroup) {
    const auto& log = fs.fiber[static_cast<std::size_t>(first)].cta.warpgroup_log;
    for (int t = first + 1; t < first + kWarpgroup && t < threads_; ++t) {
      const auto& other = fs.fiber[static_cast<std::size_t>(t)].cta.warpgroup_log;
      if (other == log) continue;
      std::size_t i = 0;
      while (i < log.size() && i < other.size() && log[i] == other[i]) ++i;
      throw Error(fmt::format("warpgroup {}: thread {} and thread {} part at warpgroup-collective "
                              "instruction {} (they executed {} and {})",
                              first / kWarpgroup, first, t, i + 1, log.size(), other.size()));
    }
  }
}

}  // namespace kh::test
