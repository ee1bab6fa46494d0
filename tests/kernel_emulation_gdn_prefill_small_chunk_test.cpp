// The small-chunk GDN prefill route (kernels/gdn_prefill/route_small_chunk.cuh), its CUDA kernel
// body compiled for the host and run by the CTA emulator (tests/cuda_on_host.h: threadIdx, the
// CTA barrier of its pipeline, the shuffles, and the mma.sync and ldmatrix fragments of
// cuda_on_host.cpp) against the fp64 CPU reference at the official tolerance: one token, partial
// and whole chunks, more chunks than the pipeline is deep, several sequences, every adversarial
// variant, the in-place state update, tokens outside every sequence, both thread orders bit for
// bit (a read across warps without the barrier between changes with the order), and the two CTA
// widths and producer counts bit for bit (four producers, as the dispatch mostly launches, unless
// a test names two).
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "kh/check/checker.h"
#include "route_small_chunk.cuh"

namespace khk::gdn_prefill {
// The kernel's `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
alignas(16) unsigned char smem[sizeof(SmallSmem)];
}  // namespace khk::gdn_prefill

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using Call = test::PrefillCall;
using test::CtaEmulator;
using test::draw_prefill_call;
using test::prefill_workload;

/// Every CTA of the route's grid at kRowWarps chain warps and kProducers producer warps per CTA,
/// in grid order; `longest_first`: the CTAs take the sequences longest first, as the launch asks
/// from SMALL_RANK_MIN_CTAS CTAs.
template <int kRowWarps, int kProducers>
void run_grid(const gp::PrefillArgs& args, CtaEmulator::Order order, bool longest_first = false) {
  using Roles = gp::SmallRoles<kRowWarps, kProducers>;
  CtaEmulator emulator(Roles::kThreads, sizeof(gp::SmallSmem), order, gp::smem);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * Roles::kTilesPerHead;
  for (std::int64_t cta = 0; cta < ctas; ++cta)
    emulator.run(
        [&](test::EmulatedCta&) {
          if (longest_first) gp::small_chunk_kernel<kRowWarps, kProducers, true>(args);
          else gp::small_chunk_kernel<kRowWarps, kProducers>(args);
        },
        cta);
}

template <int kRowWarps = 2, int kProducers = 4>
OutputSet run_small_chunk(const Call& c, CtaEmulator::Order order, bool longest_first = false) {
  OutputSet out = test::poisoned_outputs(c);
  run_grid<kRowWarps, kProducers>(test::prefill_args(c.inputs, out), order, longest_first);
  return out;
}

template <int kRowWarps = 2, int kProducers = 4>
void expect_matches_reference(const Workload& w, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + " at " + std::to_string(kRowWarps) + " chain warps and " +
               std::to_string(kProducers) + " producers" +
               (variant.empty() ? "" : " variant " + variant));
  const Call c = draw_prefill_call(w, variant, trial);
  const OutputSet out = run_small_chunk<kRowWarps, kProducers>(c, CtaEmulator::Order::ascending);
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, out, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ", max rel "
                          << r.max_relative_error << ")";
}

TEST(SmallChunkPrefill, MatchesTheReferenceOnSmallShapes) {
  expect_matches_reference(prefill_workload("one-token", 1, 1));
  expect_matches_reference(prefill_workload("six-tokens", 6, 1), "", 1);
  expect_matches_reference(prefill_workload("one-chunk", gp::kSmallChunk, 1), "", 2);
  expect_matches_reference(prefill_workload("chunk-plus-one", gp::kSmallChunk + 1, 1), "", 3);
  expect_matches_reference(prefill_workload("two-seqs", 28, 2), "", 4);
}

TEST(SmallChunkPrefill, MatchesTheReferenceOverManyChunks) {
  // More chunks than the tile ring holds, so every buffer is reused; three sequences.
  expect_matches_reference(prefill_workload("ring", 16 * (gp::kSmallTileStages + 2) + 5, 1), "", 5);
  expect_matches_reference(prefill_workload("three-seqs", 139, 3), "", 6);
  expect_matches_reference<8>(prefill_workload("wide", 70, 2), "", 11);
  // Two producer warps (load and gates on one, the inverse and the scalings on the other).
  expect_matches_reference<2, 2>(prefill_workload("ring-two-producers", 16 * 7 + 9, 2), "", 12);
}

TEST(SmallChunkPrefill, MatchesTheReferenceUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def))
    expect_matches_reference(prefill_workload("variants", 40, 3), v.name, 7);
}

TEST(SmallChunkPrefill, InPlaceStateUpdateIsSafe) {
  // new_state may be state itself: each warp reads its rows before any chunk and writes them last.
  const Call c = draw_prefill_call(prefill_workload("in-place", 20, 2), "", 8);
  const OutputSet out = test::run_in_place(
      c, [](const gp::PrefillArgs& args) { run_grid<2, 4>(args, CtaEmulator::Order::descending); });
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, out, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message;
}

TEST(SmallChunkPrefill, TokensOutsideEverySequenceGetZeroOutput) {
  const Call c = test::draw_prefill_call_with_outside_tokens(9);
  const OutputSet out = run_small_chunk(c, CtaEmulator::Order::ascending);
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, out, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message;
}

TEST(SmallChunkPrefill, LongestFirstOrderWalksEverySequenceOnce) {
  // Seven sequences of different lengths (the generator's weights; under zero_length every third
  // one empty): ranked by length, each CTA must find its own sequence and together they must
  // cover every one, the tokens outside them still cleared, with the same bits as in index order.
  for (const char* variant : {"", "zero_length"}) {
    SCOPED_TRACE(std::string("variant ") + variant);
    const Call c = draw_prefill_call(prefill_workload("ranked", 181, 7), variant, 13);
    // Narrow CTAs of two producers, the ones the launch ranks (past the resident capacity).
    const OutputSet ranked = run_small_chunk<2, 2>(c, CtaEmulator::Order::descending, true);
    const CheckResult r =
        check_outputs(c.def, c.inputs, c.reference, ranked, official_options(c.def, false));
    EXPECT_TRUE(r.passed()) << r.message;
    const OutputSet plain = run_small_chunk(c, CtaEmulator::Order::descending);
    for (std::size_t i = 0; i < plain.size(); ++i)
      EXPECT_TRUE(plain[i].tensor.bytes_equal(ranked[i].tensor)) << plain[i].name;
    const OutputSet wide = run_small_chunk<8>(c, CtaEmulator::Order::ascending, true);
    for (std::size_t i = 0; i < plain.size(); ++i)
      EXPECT_TRUE(plain[i].tensor.bytes_equal(wide[i].tensor)) << plain[i].name << " wide";
  }
  const Call outside = test::draw_prefill_call_with_outside_tokens(14);
  const OutputSet ranked = run_small_chunk<2, 2>(outside, CtaEmulator::Order::ascending, true);
  const CheckResult r = check_outputs(outside.def, outside.inputs, outside.reference, ranked,
                                      official_options(outside.def, false));
  EXPECT_TRUE(r.passed()) << r.message;
}

TEST(SmallChunkPrefill, EitherThreadOrderGivesTheSameBits) {
  // Sequences of more chunks than the tile ring holds, so that a slot reused too early shows in
  // one of the two orders.
  const Call c = draw_prefill_call(
      prefill_workload("orders", 2 * (gp::kSmallChunk * (gp::kSmallTileStages + 2) + 5), 2), "", 10);
  const OutputSet up = run_small_chunk(c, CtaEmulator::Order::ascending);
  const OutputSet down = run_small_chunk(c, CtaEmulator::Order::descending);
  for (std::size_t i = 0; i < up.size(); ++i)
    EXPECT_TRUE(up[i].tensor.bytes_equal(down[i].tensor)) << up[i].name;
  // The same arithmetic per row at either width and with either number of producers: the same
  // bits.
  const OutputSet wide = run_small_chunk<8>(c, CtaEmulator::Order::descending);
  const OutputSet two = run_small_chunk<2, 2>(c, CtaEmulator::Order::descending);
  const OutputSet wide_two = run_small_chunk<8, 2>(c, CtaEmulator::Order::ascending);
  for (std::size_t i = 0; i < up.size(); ++i) {
    EXPECT_TRUE(up[i].tensor.bytes_equal(wide[i].tensor)) << up[i].name << " at 8 chain warps";
    EXPECT_TRUE(up[i].tensor.bytes_equal(two[i].tensor)) << up[i].name << " at 2 producers";
    EXPECT_TRUE(up[i].tensor.bytes_equal(wide_two[i].tensor))
        << up[i].name << " at 8 chain warps and 2 producers";
  }
}

}  // namespace
}  // namespace kh
