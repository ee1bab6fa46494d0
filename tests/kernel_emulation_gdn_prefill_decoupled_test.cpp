// The small-chunk GDN prefill route with decoupled warp roles (route_small_chunk_decoupled.cuh:
// each role walks the chunks at its own pace, handing buffers on through shared-memory barriers),
// its CUDA kernel body compiled for the host and run by the CTA emulator, whose threads yield at
// every unmet barrier wait (tests/cta_emulator.h) and which reports a deadlock. Against the fp64
// CPU reference at the official tolerance (one token, partial and whole chunks, more chunks than
// the tile ring holds, several sequences, every adversarial variant, the in-place state update,
// tokens outside every sequence, the sequences longest first), and bit for bit against the
// lockstep kernel (small_chunk_kernel: the same arithmetic per chunk) in both thread orders at
// both CTA widths: a buffer read before its producer's arrival, or overwritten before its
// consumers' arrival, changes the bits in one of the orders or reads the poisoned shared memory.
// The persistent wide CTAs' decoupled kernel (route_small_chunk_persistent.cuh: a stream of chunks
// over several (sequence, head) items, their metadata in the tile ring) the same way, and the
// context-parallel map pass's two kinds of walk (fp32 outputs from zero rows, identity rows
// without values) against the lockstep walks. It compiles
// KH_PREFILL_EMULATION_DIR (tests/CMakeLists.txt).
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "route_small_chunk_decoupled.cuh"
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

enum class Pipeline { decoupled, lockstep };

/// Every CTA of the plain route's grid at kRowWarps chain warps and four producer warps, in grid
/// order (last first with `reversed`: the device promises no order).
template <int kRowWarps>
void run_grid(const gp::PrefillArgs& args, CtaEmulator::Order order, Pipeline pipeline,
              bool longest_first = false, bool reversed = false, std::uint64_t lagging = 0) {
  using Roles = gp::SmallRoles<kRowWarps, 4>;
  CtaEmulator emulator(Roles::kThreads, sizeof(gp::SmallSmem), order, gp::smem);
  emulator.set_lagging_warps(lagging);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * Roles::kTilesPerHead;
  for (std::int64_t i = 0; i < ctas; ++i)
    emulator.run(
        [&](test::EmulatedCta&) {
          if (pipeline == Pipeline::lockstep) {
            if (longest_first) gp::small_chunk_kernel<kRowWarps, 4, true>(args);
            else gp::small_chunk_kernel<kRowWarps, 4>(args);
          } else if (longest_first) {
            gp::small_chunk_decoupled_kernel<kRowWarps, true>(args);
          } else {
            gp::small_chunk_decoupled_kernel<kRowWarps>(args);
          }
        },
        reversed ? ctas - 1 - i : i);
}

template <int kRowWarps = 2>
OutputSet run_route(const Call& c, CtaEmulator::Order order,
                    Pipeline pipeline = Pipeline::decoupled, bool longest_first = false,
                    std::uint64_t lagging = 0) {
  OutputSet out = test::poisoned_outputs(c);
  run_grid<kRowWarps>(test::prefill_args(c.inputs, out), order, pipeline, longest_first, false,
                      lagging);
  return out;
}

template <int kRowWarps = 2>
void expect_matches_reference(const Workload& w, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + " at " + std::to_string(kRowWarps) + " chain warps" +
               (variant.empty() ? "" : " variant " + variant));
  const Call c = draw_prefill_call(w, variant, trial);
  expect_passes(c, run_route<kRowWarps>(c, CtaEmulator::Order::ascending));
}

TEST(DecoupledSmallChunkPrefill, MatchesTheReferenceOnSmallShapes) {
  expect_matches_reference(prefill_workload("one-token", 1, 1));
  expect_matches_reference(prefill_workload("six-tokens", 6, 1), "", 1);
  expect_matches_reference(prefill_workload("one-chunk", gp::kSmallChunk, 1), "", 2);
  expect_matches_reference(prefill_workload("chunk-plus-one", gp::kSmallChunk + 1, 1), "", 3);
  expect_matches_reference(prefill_workload("two-seqs", 28, 2), "", 4);
}

TEST(DecoupledSmallChunkPrefill, MatchesTheReferenceOverManyChunks) {
  // More chunks than the tile ring holds, so every buffer and every barrier phase is reused.
  expect_matches_reference(prefill_workload("ring", 16 * (2 * gp::kSmallTileStages + 1) + 5, 1),
                           "", 5);
  expect_matches_reference(prefill_workload("three-seqs", 139, 3), "", 6);
  expect_matches_reference<8>(prefill_workload("wide", 70, 2), "", 11);
}

TEST(DecoupledSmallChunkPrefill, MatchesTheReferenceUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def))
    expect_matches_reference(prefill_workload("variants", 40, 3), v.name, 7);
}

TEST(DecoupledSmallChunkPrefill, InPlaceStateUpdateIsSafe) {
  // new_state may be state itself: each chain warp reads its rows before any chunk and writes
  // them last; CTAs last first.
  const Call c = draw_prefill_call(prefill_workload("in-place", 52, 2), "", 8);
  const OutputSet out = test::run_in_place(c, [](const gp::PrefillArgs& args) {
    run_grid<2>(args, CtaEmulator::Order::descending, Pipeline::decoupled, false, true);
  });
  expect_passes(c, out);
}

TEST(DecoupledSmallChunkPrefill, TokensOutsideEverySequenceGetZeroOutput) {
  const Call c = test::draw_prefill_call_with_outside_tokens(9);
  expect_passes(c, run_route(c, CtaEmulator::Order::ascending));
}

TEST(DecoupledSmallChunkPrefill, GivesTheLockstepKernelsBitsInEitherOrder) {
  // Sequences of more chunks than the tile ring holds (a slot refilled before the chain is done
  // with it shows in one of the orders), and an empty one under zero_length.
  for (const char* variant : {"", "zero_length"}) {
    SCOPED_TRACE(std::string("variant ") + variant);
    const bool wide = *variant == 0;
    const Call c = draw_prefill_call(
        prefill_workload("orders", 2 * (gp::kSmallChunk * (gp::kSmallTileStages + 2) + 5),
                         wide ? 2 : 3),
        variant, 10);
    const OutputSet lockstep = run_route(c, CtaEmulator::Order::ascending, Pipeline::lockstep);
    expect_passes(c, lockstep);
    expect_same_bits(lockstep, run_route(c, CtaEmulator::Order::ascending), "decoupled, ascending");
    expect_same_bits(lockstep, run_route(c, CtaEmulator::Order::descending),
                     "decoupled, descending");
    if (wide)
      expect_same_bits(lockstep, run_route<8>(c, CtaEmulator::Order::descending),
                       "decoupled wide, descending");
  }
}

TEST(DecoupledSmallChunkPrefill, GivesTheSameBitsWithAnyRoleLagging) {
  // A role that lags runs only when the others are stuck, so they run ahead as far as their waits
  // allow: a producer that does not wait for a buffer to be freed overwrites it while its
  // consumer lags, a consumer that does not wait for its producer reads poisoned shared memory.
  using Roles = gp::SmallRoles<2, 4>;
  const Call c = draw_prefill_call(
      prefill_workload("lagging", gp::kSmallChunk * (gp::kSmallTileStages + 3) + 7, 1), "", 15);
  const OutputSet lockstep = run_route(c, CtaEmulator::Order::ascending, Pipeline::lockstep);
  const std::pair<const char*, std::uint64_t> roles[] = {
      {"chain", 0b11},
      {"one chain warp", 0b01},
      {"load", 1u << Roles::kLoadWarp},
      {"gate", 1u << Roles::kGateWarp},
      {"solve", 1u << Roles::kSolveWarp},
      {"scale", 1u << Roles::kScaleWarp},
      {"solve and scale", 1u << Roles::kSolveWarp | 1u << Roles::kScaleWarp}};
  bool up = true;  // the orders in turn
  for (const auto& [role, mask] : roles) {
    const auto order = up ? CtaEmulator::Order::ascending : CtaEmulator::Order::descending;
    expect_same_bits(lockstep, run_route(c, order, Pipeline::decoupled, false, mask),
                     std::string(role) + " lagging");
    up = !up;
  }
}

TEST(DecoupledSmallChunkPrefill, LongestFirstOrderWalksEverySequenceOnce) {
  // Seven sequences of different lengths, ranked by length (as the wide CTAs take them from
  // SMALL_RANK_MIN_CTAS): each CTA must find its own sequence, with the same bits as in index
  // order.
  const Call c = draw_prefill_call(prefill_workload("ranked", 181, 7), "", 13);
  const OutputSet ranked =
      run_route<8>(c, CtaEmulator::Order::descending, Pipeline::decoupled, true);
  expect_passes(c, ranked);
  expect_same_bits(ranked, run_route(c, CtaEmulator::Order::ascending), "index order");
}

/// `ctas` persistent wide CTAs of either pipeline.
OutputSet run_persistent(const Call& c, int ctas, CtaEmulator::Order order, Pipeline pipeline,
                         std::uint64_t lagging = 0) {
  OutputSet out = test::poisoned_outputs(c);
  const gp::PrefillArgs args = test::prefill_args(c.inputs, out);
  CtaEmulator emulator(gp::SmallRoles<8, 4>::kThreads, sizeof(gp::smem), order, gp::smem);
  emulator.set_lagging_warps(lagging);
  for (int cta = 0; cta < ctas; ++cta)
    emulator.run(
        [&](test::EmulatedCta&) {
          if (pipeline == Pipeline::lockstep) gp::small_chunk_persistent_kernel<4>(args, ctas);
          else gp::small_chunk_persistent_decoupled_kernel(args, ctas);
        },
        cta);
  return out;
}

TEST(DecoupledSmallChunkPrefill, PersistentCtasGiveTheLockstepBits) {
  // Seven sequences (under zero_length every third one empty) over 3 CTAs: each walks several
  // items as one stream of chunks, items switching inside the tile ring; the chain lagging (the
  // producers run ahead into the next items) or the load warp lagging.
  using Roles = gp::SmallRoles<8, 4>;
  for (const char* variant : {"", "zero_length"}) {
    SCOPED_TRACE(std::string("variant ") + variant);
    const Call c = draw_prefill_call(prefill_workload("persistent", 181, 7), variant, 21);
    const OutputSet lockstep =
        run_persistent(c, 3, CtaEmulator::Order::ascending, Pipeline::lockstep);
    expect_passes(c, lockstep);
    expect_same_bits(lockstep,
                     run_persistent(c, 3, CtaEmulator::Order::descending, Pipeline::decoupled),
                     "persistent, descending");
    expect_same_bits(lockstep,
                     run_persistent(c, 3, CtaEmulator::Order::ascending, Pipeline::decoupled, 0xff),
                     "persistent, chain lagging");
    expect_same_bits(lockstep,
                     run_persistent(c, 3, CtaEmulator::Order::descending, Pipeline::decoupled,
                                    1u << Roles::kLoadWarp),
                     "persistent, load lagging");
    expect_same_bits(lockstep,
                     run_persistent(c, 3, CtaEmulator::Order::ascending, Pipeline::decoupled,
                                    1u << Roles::kGateWarp),
                     "persistent, gate lagging");
  }
}

/// One wide CTA's walk of the context-parallel map pass's kinds (route_small_chunk_cp.cuh) over
/// `length` tokens from `begin` of head h, from zero rows (or, kIdentity, the identity without
/// values): its fp32 outputs and the rows it ends in (a map: transposed, then its tf32
/// remainders, as the scan takes them).
template <bool kIdentity>
std::vector<float> map_walk(const Call& c, std::int64_t begin, std::int64_t length, int h,
                            Pipeline pipeline, CtaEmulator::Order order) {
  OutputSet out = test::poisoned_outputs(c);
  const gp::PrefillArgs args = test::prefill_args(c.inputs, out);
  const std::int64_t exits = kIdentity ? 2 : 1;  // a map's remainders follow it
  std::vector<float> result(
      static_cast<std::size_t>(args.total_tokens * gp::kVHeads * gp::kHeadSize +
                               exits * gp::kStateFloats),
      std::nanf(""));
  gp::SmallWalk walk;
  walk.begin = begin;
  walk.length = length;
  walk.h = h;
  walk.partial = result.data() + (begin * gp::kVHeads + h) * gp::kHeadSize;
  walk.exit = result.data() + args.total_tokens * gp::kVHeads * gp::kHeadSize;
  if (kIdentity) walk.exit_lo = walk.exit + gp::kStateFloats;
  CtaEmulator emulator(gp::SmallRoles<8, 4>::kThreads, sizeof(gp::smem), order, gp::smem);
  emulator.run([&](test::EmulatedCta&) {
    gp::SmallSmem& s = *reinterpret_cast<gp::SmallSmem*>(gp::smem);
    if (pipeline == Pipeline::lockstep) {
      gp::small_chunk_walk<8, 4, true, kIdentity, float>(args, walk, s);
    } else {
      gp::small_ring_start<8, kIdentity>(s);
      gp::small_chunk_walk_decoupled<8, true, kIdentity, float>(args, walk, s);
    }
  });
  return result;
}

TEST(DecoupledSmallChunkPrefill, MapPassWalksGiveTheLockstepBits) {
  // A group's local walk (fp32 outputs from zero rows) and its map walk (identity rows, no
  // values: the queries through the map), over more chunks than the tile ring holds, from a token
  // inside a sequence.
  const Call c = draw_prefill_call(prefill_workload("map-walks", 150, 1), "", 22);
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (const auto order : {CtaEmulator::Order::ascending, CtaEmulator::Order::descending}) {
    const auto local = map_walk<false>(c, 16, 117, 3, Pipeline::lockstep, order);
    EXPECT_FALSE(std::isnan(local.back())) << "the local walk ends in its rows";
    EXPECT_TRUE(same_bits(local, map_walk<false>(c, 16, 117, 3, Pipeline::decoupled, order)))
        << "local walk";
    const auto map = map_walk<true>(c, 16, 117, 5, Pipeline::lockstep, order);
    EXPECT_FALSE(std::isnan(map.back())) << "the map walk ends in its map's remainders";
    EXPECT_TRUE(same_bits(map, map_walk<true>(c, 16, 117, 5, Pipeline::decoupled, order)))
        << "map walk";
  }
}

}  // namespace
}  // namespace kh
