// The decoupled small-chunk GDN prefill route's narrow CTAs with each group of 16 value rows held
// by SMALL_KEY_PARTS (2 or 4) chain warps, each over a part of the keys
// (small_chunk_chain_split.cuh: the group exchanges its partial D and Dq through shared memory
// once per chunk), its CUDA kernel body compiled for the host and run by the CTA emulator (tests/cta_emulator.h: threads yield at unmet barrier
// waits, warps can be made to lag, a deadlock is an error). Against the fp64 CPU reference at the
// official tolerance (one token to more chunks than the tile ring holds, several sequences, every
// adversarial variant, the in-place state update, tokens outside every sequence), and bit for bit
// with itself in both thread orders and with any warp lagging: a partial read before the other
// warp published it, or overwritten before the other warp read it, changes the bits in one of the
// schedules or reads the poisoned shared memory. Built with 2 and 4 key parts, and with one and
// with two warps of each per-chunk producer role (SMALL_SPLIT_GATES, SMALL_SPLIT_PHASE_B: the
// second takes the odd chunks), and at the manifest's defaults. It compiles
// KH_PREFILL_EMULATION_DIR (tests/CMakeLists.txt).
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "route_small_chunk_decoupled.cuh"

namespace khk::gdn_prefill {
// The kernel's `extern __shared__` array: SmallSmem, then the groups' exchange.
alignas(16) unsigned char smem[kSmallKeySplitOffset + sizeof(SmallKeySplitSmem<kSmallKeyParts>)];
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
constexpr int kParts = gp::kSmallKeyParts;
using Roles = gp::SmallRoles<2, 4, kParts>;

/// Every CTA of the plain route's narrow grid, key split, in grid order (last first with
/// `reversed`); the warps of `lagging` run only when the others are stuck. Warps interleave at
/// every warp barrier, so the two warps of a role split by chunk parity (SMALL_SPLIT_GATES,
/// SMALL_SPLIT_PHASE_B) run side by side through their chunks' work.
void run_grid(const gp::PrefillArgs& args, CtaEmulator::Order order, bool reversed = false,
              std::uint64_t lagging = 0) {
  CtaEmulator emulator(Roles::kThreads, sizeof(gp::smem), order, gp::smem);
  emulator.set_lagging_warps(lagging);
  emulator.set_switch_at_warp_barriers(true);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * Roles::kTilesPerHead;
  for (std::int64_t i = 0; i < ctas; ++i)
    emulator.run(
        [&](test::EmulatedCta&) { gp::small_chunk_decoupled_kernel<2, false, kParts>(args); },
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
  // new_state may be state itself: each chain warp reads its part of the rows before any chunk and
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

TEST(KeySplitSmallChunkPrefill, KeepsTheGuessedFirstTileOnlyWhereItIsTheRequestedOne) {
  // Sequence 0's CTAs request tokens 0-15 before reading cu_seqlens (SMALL_EARLY_START).
  // Kept: a full first chunk from token 0. Replaced after landing (the emulator lands pending
  // copies last issued first, so a request that does not wait for the guess loses to it): a
  // first sequence shorter than a chunk, one that starts after token 0, an empty one.
  const std::pair<const char*, std::vector<std::int64_t>> cases[] = {
      {"one full chunk, kept", {0, 16, 40}},
      {"shorter than a chunk", {0, 5, 40}},
      {"starts at token 3", {3, 30, 40}},
      {"empty", {0, 0, 40}}};
  std::int64_t trial = 20;
  for (const auto& [what, cu] : cases) {
    SCOPED_TRACE(what);
    const Call c = test::draw_prefill_call_with_cu_seqlens(40, cu, trial++);
    expect_passes(c, run_route(c, CtaEmulator::Order::ascending));
    expect_passes(c, run_route(c, CtaEmulator::Order::descending, 1u << Roles::kLoadWarp));
  }
}

TEST(KeySplitSmallChunkPrefill, GivesTheSameBitsInEitherOrderAndWithAnyWarpLagging) {
  // A warp that lags runs only when the others are stuck: a group's warp that does not wait for
  // the others' partials reads the poison (or an older chunk's) while they lag; one that
  // overwrites its slot before the others have read it changes what a lagging warp adds.
  const Call c = draw_prefill_call(
      prefill_workload("lagging", gp::kSmallChunk * (2 * gp::kSmallTileStages + 3) + 7, 2), "",
      15);
  const OutputSet first = run_route(c, CtaEmulator::Order::ascending);
  expect_passes(c, first);
  expect_same_bits(first, run_route(c, CtaEmulator::Order::descending), "descending");
  const std::uint64_t group = (1u << kParts) - 1;  // group 0's chain warps
  const std::uint64_t gates =
      1u << Roles::kGateWarp | (Roles::kGates == 2 ? 1u << Roles::kSecondGateWarp : 0);
  const std::uint64_t odd_phase_b =
      Roles::kPhaseBLanes == 2 ? 1u << Roles::kSecondSolveWarp | 1u << Roles::kSecondScaleWarp : 0;
  const std::pair<const char*, std::uint64_t> lagging[] = {
      {"every chain warp", (1u << Roles::kChainWarps) - 1},
      {"key part 0 of group 0", 0b1},
      {"the last key part of group 0", 1u << (kParts - 1)},
      {"group 1", group << kParts},
      {"key part 0 of each group", 1u | 1u << kParts},
      {"key parts 1 and up of group 0", group & ~1u},
      {"load", 1u << Roles::kLoadWarp},
      {"gate", 1u << Roles::kGateWarp},
      {"second gate (SMALL_SPLIT_GATES)", Roles::kGates == 2 ? 1u << Roles::kSecondGateWarp : 0},
      {"both gates", Roles::kGates == 2 ? gates : 0},
      {"solve and scale", 1u << Roles::kSolveWarp | 1u << Roles::kScaleWarp},
      {"second solve (SMALL_SPLIT_PHASE_B)", odd_phase_b & 1u << Roles::kSecondSolveWarp},
      {"second scale", odd_phase_b & 1u << Roles::kSecondScaleWarp},
      {"every phase B warp", odd_phase_b ? odd_phase_b | 1u << Roles::kSolveWarp |
                                               1u << Roles::kScaleWarp
                                         : 0},
      {"first solve and second scale",
       odd_phase_b ? 1u << Roles::kSolveWarp | 1u << Roles::kSecondScaleWarp : 0}};
  bool up = false;  // the orders in turn
  for (const auto& [warps, mask] : lagging) {
    if (mask == 0) continue;  // a role of one warp
    const auto order = up ? CtaEmulator::Order::ascending : CtaEmulator::Order::descending;
    expect_same_bits(first, run_route(c, order, mask), std::string(warps) + " lagging");
    up = !up;
  }
}

}  // namespace
}  // namespace kh
