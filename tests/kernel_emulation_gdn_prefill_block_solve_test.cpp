// The block-solve GDN prefill route (route_block_solve.cuh of KH_PREFILL_BLOCK_SOLVE_DIR), its
// CUDA kernel body compiled for the host and run by the CTA emulator (tests/cuda_on_host.h)
// against the fp64 CPU reference at the official tolerance: one token, partial and whole blocks
// and spans, more spans than the two tile buffers (so each is refilled), several sequences,
// every adversarial variant, the in-place state update, tokens outside every sequence, sequence
// 0 not starting at token 0 (the guessed first request thrown away), and both thread orders bit
// for bit (a read across warps without the barrier between them changes with the order).
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <string>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "kh/check/checker.h"
#include "route_block_solve.cuh"

namespace khk::gdn_prefill {
// The kernel's `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
alignas(16) unsigned char smem[sizeof(SolveSmem)];
}  // namespace khk::gdn_prefill

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using Call = test::PrefillCall;
using test::CtaEmulator;
using test::draw_prefill_call;
using test::prefill_workload;

void run_grid(const gp::PrefillArgs& args, CtaEmulator::Order order) {
  CtaEmulator emulator(gp::kSolveThreads, sizeof(gp::SolveSmem), order, gp::smem);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * gp::kSolveTilesPerHead;
  for (std::int64_t cta = 0; cta < ctas; ++cta)
    emulator.run([&](test::EmulatedCta&) { gp::block_solve_kernel(args); }, cta);
}

OutputSet run_block_solve(const Call& c, CtaEmulator::Order order) {
  OutputSet out = test::poisoned_outputs(c);
  run_grid(test::prefill_args(c.inputs, out), order);
  return out;
}

void expect_matches_reference(const Workload& w, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + (variant.empty() ? "" : " variant " + variant));
  const Call c = draw_prefill_call(w, variant, trial);
  test::expect_passes(c, run_block_solve(c, CtaEmulator::Order::ascending));
}

TEST(BlockSolvePrefill, MatchesTheReferenceOnSmallShapes) {
  expect_matches_reference(prefill_workload("one-token", 1, 1));
  expect_matches_reference(prefill_workload("six-tokens", 6, 1), "", 1);
  expect_matches_reference(prefill_workload("one-block", gp::kSolveBlock, 1), "", 2);
  expect_matches_reference(prefill_workload("block-plus-one", gp::kSolveBlock + 1, 1), "", 3);
  expect_matches_reference(prefill_workload("one-span", gp::kSolveSpan, 1), "", 4);
  expect_matches_reference(prefill_workload("two-seqs", 28, 2), "", 5);
}

TEST(BlockSolvePrefill, MatchesTheReferenceOverManySpans) {
  // More spans than the two tile buffers: each is refilled while the other is in use.
  expect_matches_reference(prefill_workload("spans", 3 * gp::kSolveSpan + 37, 1), "", 6);
  expect_matches_reference(prefill_workload("three-seqs", 255, 3), "", 7);
  expect_matches_reference(prefill_workload("long", 1000, 2), "", 8);
}

TEST(BlockSolvePrefill, MatchesTheReferenceUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def))
    expect_matches_reference(prefill_workload("variants", 134, 3), v.name, 9);
}

TEST(BlockSolvePrefill, InPlaceStateUpdateIsSafe) {
  // new_state may be state itself: each CTA reads its rows before any span and writes them last.
  const Call c = draw_prefill_call(prefill_workload("in-place", 90, 2), "", 10);
  const OutputSet out = test::run_in_place(
      c, [](const gp::PrefillArgs& args) { run_grid(args, CtaEmulator::Order::descending); });
  test::expect_passes(c, out);
}

TEST(BlockSolvePrefill, TokensOutsideEverySequenceGetZeroOutput) {
  // Sequence 0 starts after token 0 here, so its CTAs' guessed first request is not the right one.
  const Call c = test::draw_prefill_call_with_outside_tokens(11);
  test::expect_passes(c, run_block_solve(c, CtaEmulator::Order::ascending));
}

TEST(BlockSolvePrefill, EitherThreadOrderGivesTheSameBits) {
  const Call c = draw_prefill_call(prefill_workload("orders", 2 * gp::kSolveSpan * 3 + 21, 2), "", 12);
  const OutputSet up = run_block_solve(c, CtaEmulator::Order::ascending);
  const OutputSet down = run_block_solve(c, CtaEmulator::Order::descending);
  test::expect_same_bits(up, down, "ascending against descending thread order");
}

}  // namespace
}  // namespace kh
