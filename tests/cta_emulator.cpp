#include "cta_emulator.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "kh/core/error.h"

namespace kh::test {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;  // per fiber: a kernel's locals, with room
constexpr int kWarpSize = 32;
constexpr unsigned char kSharedPoison = 0xff;  // reads of unwritten shared memory give NaNs

thread_local CtaEmulator* t_running = nullptr;

}  // namespace

struct CtaEmulator::Fibers {
  struct Fiber {
    ucontext_t context{};
    std::unique_ptr<unsigned char[]> stack;
    EmulatedCta cta;
    std::int64_t barriers = 0;
    bool done = false;
  };
  ucontext_t scheduler{};
  std::vector<Fiber> fiber;
  std::vector<float> lanes;  // one exchange slot per thread
  std::unique_ptr<unsigned char, decltype(&std::free)> shared{nullptr, &std::free};
  std::size_t shared_bytes = 0;
  const std::function<void(EmulatedCta&)>* program = nullptr;
  int current = 0;
  std::exception_ptr error;
};

void EmulatedCta::sync() { emulator_->wait_at_barrier(thread_); }

float EmulatedCta::shfl_xor(float x, int lane_mask) {
  return emulator_->exchange(thread_, x, lane_mask);
}

CtaEmulator::CtaEmulator(int threads, std::size_t shared_bytes, Order order)
    : threads_(threads), order_(order), fibers_(std::make_unique<Fibers>()) {
  if (threads <= 0 || threads % kWarpSize != 0 || threads > 1024)
    throw Error(fmt::format("CtaEmulator: {} threads (expected a multiple of 32 up to 1024)",
                            threads));
  fibers_->fiber.resize(static_cast<std::size_t>(threads));
  fibers_->lanes.resize(static_cast<std::size_t>(threads));
  fibers_->shared_bytes = shared_bytes;
  fibers_->shared.reset(static_cast<unsigned char*>(
      std::aligned_alloc(16, (shared_bytes + 15) / 16 * 16 + 16)));
  for (int t = 0; t < threads; ++t) {
    auto& f = fibers_->fiber[static_cast<std::size_t>(t)];
    f.stack = std::make_unique<unsigned char[]>(kStackBytes);
    f.cta.emulator_ = this;
    f.cta.thread_ = t;
    f.cta.smem = fibers_->shared.get();
  }
}

CtaEmulator::~CtaEmulator() = default;

void CtaEmulator::wait_at_barrier(int thread) {
  auto& f = fibers_->fiber[static_cast<std::size_t>(thread)];
  ++f.barriers;
  swapcontext(&f.context, &fibers_->scheduler);
}

float CtaEmulator::exchange(int thread, float x, int lane_mask) {
  if (lane_mask < 0 || lane_mask >= kWarpSize)
    throw Error(fmt::format("shfl_xor: lane mask {} outside the warp", lane_mask));
  fibers_->lanes[static_cast<std::size_t>(thread)] = x;
  wait_at_barrier(thread);
  const float other = fibers_->lanes[static_cast<std::size_t>(thread ^ lane_mask)];
  wait_at_barrier(thread);
  return other;
}

void CtaEmulator::run(const std::function<void(EmulatedCta&)>& program) {
  Fibers& fs = *fibers_;
  fs.program = &program;
  fs.error = nullptr;
  std::memset(fs.shared.get(), kSharedPoison, fs.shared_bytes);
  for (auto& f : fs.fiber) {
    f.barriers = 0;
    f.done = false;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &fs.scheduler;
    makecontext(&f.context, [] {
      CtaEmulator& e = *t_running;
      auto& me = e.fibers_->fiber[static_cast<std::size_t>(e.fibers_->current)];
      try {
        (*e.fibers_->program)(me.cta);
      } catch (...) {
        if (!e.fibers_->error) e.fibers_->error = std::current_exception();
      }
      me.done = true;
    }, 0);
  }
  CtaEmulator* const outer = t_running;
  t_running = this;
  barriers_ = 0;
  for (;;) {
    int running = 0;
    for (int i = 0; i < threads_ && !fs.error; ++i) {
      const int t = order_ == Order::ascending ? i : threads_ - 1 - i;
      auto& f = fs.fiber[static_cast<std::size_t>(t)];
      if (f.done) continue;
      fs.current = t;
      swapcontext(&fs.scheduler, &f.context);
      running += f.done ? 0 : 1;
    }
    if (fs.error || running == 0) break;
    // Every thread waits at the same barrier: none has left, none is at another count.
    const auto waiting = [](const Fibers::Fiber& f) { return !f.done; };
    const auto first = std::find_if(fs.fiber.begin(), fs.fiber.end(), waiting);
    for (int t = 0; t < threads_; ++t) {
      const auto& f = fs.fiber[static_cast<std::size_t>(t)];
      if (f.done || f.barriers != first->barriers) {
        t_running = outer;
        throw Error(fmt::format("divergent barriers: thread {} {} while thread {} waits at barrier {}",
                                t, f.done ? "finished" : fmt::format("waits at barrier {}", f.barriers),
                                first - fs.fiber.begin(), first->barriers));
      }
    }
    barriers_ = first->barriers;
  }
  t_running = outer;
  if (fs.error) std::rethrow_exception(fs.error);
}

}  // namespace kh::test
