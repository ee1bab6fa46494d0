// The decoupled small-chunk GDN prefill route's narrow CTAs with each group of 16 value rows held
// by two chain warps, each over half of the keys (small_chunk_chain_split.cuh: the pair exchanges
// its partial D and Dq through shared memory once per chunk), its CUDA kernel body compiled for
// the host and run by the CTA emulator (tests/cta_emulator.h: threads yield at unmet barrier
// waits, warps can be made to lag, a deadlock is an error). Against the fp64 CPU reference at the
// official tolerance (one token to more chunks than the tile ring holds, several sequences, every
// adversarial variant, the in-place state update, tokens outside every sequence), and bit for bit
// with itself in both thread orders and with any warp lagging: a partial read before the other
// warp published it, or overwritten before the other warp read it, changes the bits in one of the
// schedules or reads the poisoned shared memory. Built with one and with two gate warps
// (SMALL_SPLIT_GATES: the second takes the odd chunks). It compiles KH_GDN_KEY_SPLIT_EMULATION_DIR
// (tests/CMakeLists.txt).
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <cstdint>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "route_small_chunk_decoupled.cuh"

namespace khk::gdn_prefill {
// The kernel's `extern __shared__` array: SmallSmem, then the pairs' exchange.
alignas(16) unsigned char smem[kSmallKeyExchangeOffset + sizeof(SmallKeyExchange)];
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
using Roles = gp::SmallRoles<2, 4, 2>;

/// Every CTA of the plain route's narrow grid, key split, in grid order (last first with
/// `reversed`); the warps of `lagging` run only when the others are stuck.
void run_grid(const gp::PrefillArgs& args, CtaEmulator::Order order, bool reversed = false,
              std::uint64_t lagging = 0) {
  CtaEmulator emulator(Roles::kThreads, sizeof(gp::smem), order, gp::smem);
  emulator.set_lagging_warps(lagging);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * Roles::kTilesPerHead;
  for (std::int64_t i = 0; i < ctas; ++i)
    emulator.run([&](test::EmulatedCta&) { gp::small_chunk_decoupled_kernel<2, false, 2>(args); },
                 reversed ? ctas - 1 - i : i);
}

OutputSet run_route(const Call& c, CtaEmulator::Order order, std::uint64_t lagging = 0) {
  OutputSet out = test::poisoned_outputs(c);
  run_grid(test::prefill_args(c.inputs, out), order, false, lagging);
  return out;
}

void expect_matches_reference(const Workload& w, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + (variant.empty() ? "" : " variant " + variant));
  const Call c = draw_prefill_call(w, variant, trial);
  expect_passes(c, run_route(c, CtaEmulator::Order::ascending));
}

TEST(KeySplitSmallChunkPrefill, MatchesTheReferenceOnSmallShapes) {
  expect_matches_reference(prefill_workload("one-token", 1, 1));
  expect_matches_reference(prefill_workload("nine-tokens", 9, 1), "", 1);  // tile 1 partial
  expect_matches_reference(prefill_workload("one-chunk", gp::kSmallChunk, 1), "", 2);
  expect_matches_reference(prefill_workload("chunk-plus-one", gp::kSmallChunk + 1, 1), "", 3);
  expect_matches_reference(prefill_workload("two-seqs", 28, 2), "", 4);
}

TEST(KeySplitSmallChunkPrefill, MatchesTheReferenceOverManyChunks) {
  // More chunks than the tile ring holds, so every buffer, exchange slot and phase is reused.
  expect_matches_reference(prefill_workload("ring", 16 * (2 * gp::kSmallTileStages + 1) + 5, 1),
                           "", 5);
  expect_matches_reference(prefill_workload("three-seqs", 139, 3), "", 6);
}

TEST(KeySplitSmallChunkPrefill, MatchesTheReferenceUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def))
    expect_matches_reference(prefill_workload("variants", 40, 3), v.name, 7);
}

TEST(KeySplitSmallChunkPrefill, InPlaceStateUpdateIsSafe) {
  // new_state may be state itself: each chain warp reads its half rows before any chunk and
  // writes them last; CTAs last first.
  const Call c = draw_prefill_call(prefill_workload("in-place", 52, 2), "", 8);
  const OutputSet out = test::run_in_place(c, [](const gp::PrefillArgs& args) {
    run_grid(args, CtaEmulator::Order::descending, true);
  });
  expect_passes(c, out);
}

TEST(KeySplitSmallChunkPrefill, TokensOutsideEverySequenceGetZeroOutput) {
  const Call c = test::draw_prefill_call_with_outside_tokens(9);
  expect_passes(c, run_route(c, CtaEmulator::Order::ascending));
}

TEST(KeySplitSmallChunkPrefill, GivesTheSameBitsInEitherOrderAndWithAnyWarpLagging) {
  // A warp that lags runs only when the others are stuck: a pair's warp that does not wait for
  // the other's partials reads the poison (or an older chunk's) while the other lags; one that
  // overwrites its slot before the other has read it changes what the lagging warp adds.
  const Call c = draw_prefill_call(
      prefill_workload("lagging", gp::kSmallChunk * (2 * gp::kSmallTileStages + 3) + 7, 2), "",
      15);
  const OutputSet first = run_route(c, CtaEmulator::Order::ascending);
  expect_passes(c, first);
  expect_same_bits(first, run_route(c, CtaEmulator::Order::descending), "descending");
  const std::pair<const char*, std::uint64_t> lagging[] = {
      {"every chain warp", 0b1111},
      {"key half 0 of pair 0", 0b0001},
      {"key half 1 of pair 0", 0b0010},
      {"pair 1", 0b1100},
      {"key half 0 of each pair", 0b0101},
      {"load", 1u << Roles::kLoadWarp},
      {"gate", 1u << Roles::kGateWarp},
      {"second gate (SMALL_SPLIT_GATES)", Roles::kGates == 2 ? 1u << Roles::kSecondGateWarp : 0},
      {"both gates", 1u << Roles::kGateWarp | (Roles::kGates == 2 ? 1u << Roles::kSecondGateWarp : 0)},
      {"solve and scale", 1u << Roles::kSolveWarp | 1u << Roles::kScaleWarp}};
  bool up = false;  // the orders in turn
  for (const auto& [warps, mask] : lagging) {
    if (mask == 0) continue;  // one gate warp
    const auto order = up ? CtaEmulator::Order::ascending : CtaEmulator::Order::descending;
    expect_same_bits(first, run_route(c, order, mask), std::string(warps) + " lagging");
    up = !up;
  }
}

}  // namespace
}  // namespace kh
