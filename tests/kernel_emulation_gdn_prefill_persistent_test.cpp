// The small-chunk route's persistent wide CTAs (route_small_chunk_persistent.cuh), their CUDA
// kernel body compiled for the host and run by the CTA emulator against the fp64 CPU reference
// at the official tolerance and bit for bit against the plain route's wide CTAs (the same
// arithmetic per chunk): few CTAs for many (sequence, head) items, so that each walks several
// items as one stream of chunks, empty sequences among them, tokens outside every sequence, the
// in-place state update, and both thread orders.
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "route_small_chunk_persistent.cuh"

namespace khk::gdn_prefill {
// The kernels' `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
alignas(16) unsigned char smem[sizeof(SmallSmem) + sizeof(SmallQueue)];
}  // namespace khk::gdn_prefill

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using Call = test::PrefillCall;
using test::CtaEmulator;
using test::expect_passes;
using test::expect_same_bits;
using test::draw_prefill_call;
using test::prefill_workload;

constexpr int kProducers = 4;
using Roles = gp::SmallRoles<8, kProducers>;

void run_persistent(const gp::PrefillArgs& args, int ctas, CtaEmulator::Order order) {
  CtaEmulator emulator(Roles::kThreads, sizeof(gp::SmallSmem) + sizeof(gp::SmallQueue), order,
                       gp::smem);
  for (int cta = 0; cta < ctas; ++cta)
    emulator.run([&](test::EmulatedCta&) { gp::small_chunk_persistent_kernel<kProducers>(args, ctas); },
                 cta);
}

OutputSet persistent_outputs(const Call& c, int ctas,
                             CtaEmulator::Order order = CtaEmulator::Order::ascending) {
  OutputSet out = test::poisoned_outputs(c);
  run_persistent(test::prefill_args(c.inputs, out), ctas, order);
  return out;
}

/// The plain route's wide CTAs, one per (sequence, head), in index order.
OutputSet plain_outputs(const Call& c) {
  OutputSet out = test::poisoned_outputs(c);
  const gp::PrefillArgs args = test::prefill_args(c.inputs, out);
  CtaEmulator emulator(Roles::kThreads, sizeof(gp::SmallSmem), CtaEmulator::Order::ascending,
                       gp::smem);
  for (std::int64_t cta = 0; cta < args.num_seqs * gp::kVHeads; ++cta)
    emulator.run([&](test::EmulatedCta&) { gp::small_chunk_kernel<8, kProducers>(args); }, cta);
  return out;
}

TEST(PersistentPrefill, FewCtasWalkEveryItemAsThePlainRouteDoes) {
  // Seven sequences of different lengths: 56 items over 1, 3 and 7 CTAs (the snake's rounds run
  // forward and backward, the last one partial), and as many CTAs as items.
  const Call c = draw_prefill_call(prefill_workload("persistent", 181, 7), "", 21);
  const OutputSet plain = plain_outputs(c);
  expect_passes(c, plain);
  for (int ctas : {1, 3, 7, 56}) {
    SCOPED_TRACE("ctas " + std::to_string(ctas));
    const OutputSet out = persistent_outputs(c, ctas);
    expect_passes(c, out);
    expect_same_bits(plain, out, "against the plain route");
  }
}

TEST(PersistentPrefill, EmptySequencesEndAtZeroUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def)) {
    SCOPED_TRACE("variant " + v.name);
    const Call c = draw_prefill_call(prefill_workload("variants", 100, 6), v.name, 22);
    expect_passes(c, persistent_outputs(c, 5));
  }
}

TEST(PersistentPrefill, TokensOutsideEverySequenceGetZeroOutput) {
  const Call c = test::draw_prefill_call_with_outside_tokens(23);
  expect_passes(c, persistent_outputs(c, 3));
}

TEST(PersistentPrefill, InPlaceStateUpdateIsSafe) {
  // Each item's rows are read when its walk starts and written when it ends, by one CTA.
  const Call c = draw_prefill_call(prefill_workload("in-place", 90, 5), "", 24);
  const OutputSet out = test::run_in_place(
      c, [](const gp::PrefillArgs& args) { run_persistent(args, 4, CtaEmulator::Order::descending); });
  expect_passes(c, out);
}

TEST(PersistentPrefill, EitherThreadOrderGivesTheSameBits) {
  const Call c = draw_prefill_call(prefill_workload("orders", 150, 4), "", 25);
  expect_same_bits(persistent_outputs(c, 3, CtaEmulator::Order::ascending),
                   persistent_outputs(c, 3, CtaEmulator::Order::descending), "in either order");
}

}  // namespace
}  // namespace kh
