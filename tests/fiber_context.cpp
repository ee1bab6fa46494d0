#include "fiber_context.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
// kh_fiber_switch(void** save, void* load): pushes the System V callee-saved registers and the
// SSE and x87 control words, stores the stack pointer in *save, loads `load` and pops the same
// frame from there. A prepared fiber's stack holds such a frame whose return address is its entry.
extern "C" void kh_fiber_switch(void** save, void* load);
asm(R"(
  .pushsection .text
  .p2align 4
  .globl kh_fiber_switch
  .type kh_fiber_switch, @function
kh_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kh_fiber_switch, .-kh_fiber_switch
  .popsection
)");
#endif

namespace kh::test {

#if defined(__x86_64__)

namespace {
constexpr std::uint32_t kDefaultMxcsr = 0x1f80;  // all SSE exceptions masked, round to nearest
constexpr std::uint16_t kDefaultX87Control = 0x037f;
}  // namespace

void fiber_prepare(FiberContext& fiber, unsigned char* stack, std::size_t bytes, void (*entry)()) {
  // From the 16-byte-aligned top down: a null return address for entry (so that entry starts
  // with the stack as a call leaves it, 8 mod 16), entry as kh_fiber_switch's return address,
  // six zeroed registers, the two control words.
  auto top = reinterpret_cast<std::uintptr_t>(stack + bytes) & ~std::uintptr_t{15};
  auto* frame = reinterpret_cast<std::uint64_t*>(top) - 9;
  std::memset(frame, 0, 9 * sizeof(std::uint64_t));
  frame[7] = reinterpret_cast<std::uint64_t>(entry);
  std::memcpy(frame, &kDefaultMxcsr, sizeof kDefaultMxcsr);
  std::memcpy(reinterpret_cast<unsigned char*>(frame) + 4, &kDefaultX87Control,
              sizeof kDefaultX87Control);
  fiber.stack_pointer = frame;
}

void fiber_switch(FiberContext& from, FiberContext& to) {
  kh_fiber_switch(&from.stack_pointer, to.stack_pointer);
}

#else

void fiber_prepare(FiberContext& fiber, unsigned char* stack, std::size_t bytes, void (*entry)()) {
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack;
  fiber.context.uc_stack.ss_size = bytes;
  fiber.context.uc_link = nullptr;
  makecontext(&fiber.context, entry, 0);
}

void fiber_switch(FiberContext& from, FiberContext& to) { swapcontext(&from.context, &to.context); }

#endif

}  // namespace kh::test
