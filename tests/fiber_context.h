#pragma once
// A cooperative fiber's saved machine state and the switch between two fibers, for the CTA
// emulator (cta_emulator.cpp), which switches between a CTA's threads tens of millions of times
// per test. On x86-64 the switch saves the callee-saved registers and the floating-point control
// words on the fiber's own stack and swaps stack pointers (a few nanoseconds); elsewhere it is
// swapcontext, which also makes a sigprocmask system call per switch (that call was ~40 % of the
// emulation tests' time).

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace kh::test {

struct FiberContext {
#if defined(__x86_64__)
  void* stack_pointer = nullptr;  // where the fiber's registers were pushed when it switched out
#else
  ucontext_t context{};
#endif
};

// Prepares `fiber` to run entry() on [stack, stack + bytes) at its first switch-in. entry() must
// never return: it ends by switching to another fiber for good.
void fiber_prepare(FiberContext& fiber, unsigned char* stack, std::size_t bytes, void (*entry)());

// Saves the running code's state in `from` and resumes `to` (prepared, or saved by a switch).
void fiber_switch(FiberContext& from, FiberContext& to);

}  // namespace kh::test
