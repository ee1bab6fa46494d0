// The small-chunk GDN prefill route in context-parallel groups
// (kernels/gdn_prefill/route_small_chunk_cp.cuh): its map pass, scan and correction, CUDA kernel
// bodies compiled for the host and run by the CTA emulator one grid after another (as the
// stream orders them), against the fp64 CPU reference at the official tolerance: groups of
// whole and partial chunks, more groups than a sequence has chunks (empty trailing groups), empty
// sequences with an initial state, every adversarial variant, the in-place state update, tokens
// outside every sequence, and both thread orders bit for bit.
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "route_small_chunk_cp.cuh"

namespace khk::gdn_prefill {
// The kernels' `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
alignas(16) unsigned char smem[std::max(
    {sizeof(SmallSmem), sizeof(SmallScanSmem), sizeof(SmallCorrectSmem)})];
}  // namespace khk::gdn_prefill

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using Call = test::PrefillCall;
using test::CtaEmulator;
using test::expect_passes;
using test::draw_prefill_call;
using test::prefill_workload;

constexpr int kRowWarps = 8, kProducers = 4;  // as the dispatch launches it
using Roles = gp::SmallRoles<kRowWarps, kProducers>;

/// Every CTA of one grid of `ctas` CTAs of `threads` threads, in grid order.
template <class Body>
void run_grid(std::int64_t ctas, int threads, std::size_t smem_bytes, CtaEmulator::Order order,
              Body&& body) {
  CtaEmulator emulator(threads, smem_bytes, order, gp::smem);
  for (std::int64_t cta = 0; cta < ctas; ++cta)
    emulator.run([&](test::EmulatedCta&) { body(); }, cta);
}

/// The route's three launches in `groups` groups, on a workspace poisoned with NaN (a matrix
/// read before it is written fails the check).
void run_cp(const gp::PrefillArgs& args, int groups, CtaEmulator::Order order) {
  const std::int64_t heads = args.num_seqs * gp::kVHeads;
  std::vector<float> workspace(
      gp::SmallGroupSpace::floats(args.num_seqs, groups, args.total_tokens),
      std::numeric_limits<float>::quiet_NaN());
  const gp::SmallGroupSpace space{workspace.data(), groups, args.num_seqs, args.total_tokens};
  run_grid(heads * gp::small_cp_map_walks(groups) * Roles::kTilesPerHead, Roles::kThreads,
           sizeof(gp::SmallSmem), order,
           [&] { gp::small_cp_map_kernel<kRowWarps, kProducers>(args, space); });
  run_grid(heads * gp::kScanCtasPerHead, gp::kScanThreadsPerCta,
           sizeof(gp::SmallScanSmem), order,
           [&] { gp::small_cp_scan_kernel(space, args.new_state); });
  const std::int64_t tiles = gp::small_correct_tiles(args.total_tokens, groups);
  run_grid(heads * (groups - 1) * tiles, gp::kCorrectThreads, sizeof(gp::SmallCorrectSmem), order,
           [&] { gp::small_cp_correct_kernel(args, space, tiles); });
}

#if defined(GDN_MAP_CTA_OF)
// The map pass's CTA order (small_cp_map_cta): a bijection onto (head, walk index) with
// small_cp_map_cta_of its inverse, and by walk kind every consecutive pair of CTAs (the two SMs of
// a TPC) runs one kind of walk.
TEST(SmallCpMapOrder, BijectionAndPairsOfOneKind) {
  for (std::int64_t seqs : {1, 2, 3, 5})
    for (int groups = 2; groups <= 9; ++groups) {
      const std::int64_t heads = seqs * gp::kVHeads, ctas = heads * gp::small_cp_map_walks(groups);
      std::vector<int> seen(static_cast<std::size_t>(ctas), 0);
      const auto kind = [&](int index) { return index == 0 ? 0 : index < groups ? 1 : 2; };
      for (std::int64_t cta = 0; cta < ctas; ++cta) {
        const gp::MapCta who = gp::small_cp_map_cta(cta, heads, groups);
        ASSERT_GE(who.head, 0);
        ASSERT_LT(who.head, heads);
        ASSERT_GE(who.index, 0);
        ASSERT_LT(who.index, gp::small_cp_map_walks(groups));
        ASSERT_EQ(gp::small_cp_map_cta_of(who.head, who.index, heads, groups), cta);
        ++seen[static_cast<std::size_t>(who.head * gp::small_cp_map_walks(groups) + who.index)];
        if (gp::kSmallCpMapByKind && cta % 2 == 1) {
          EXPECT_EQ(kind(who.index), kind(gp::small_cp_map_cta(cta - 1, heads, groups).index))
              << "CTAs " << cta - 1 << " and " << cta << " at " << seqs << " sequences, " << groups
              << " groups";
        }
      }
      for (int n : seen) ASSERT_EQ(n, 1);
    }
}
#endif

OutputSet run_cp_call(const Call& c, int groups, CtaEmulator::Order order) {
  OutputSet out = test::poisoned_outputs(c);
  run_cp(test::prefill_args(c.inputs, out), groups, order);
  return out;
}

void expect_matches_reference(const Workload& w, int groups, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + " in " + std::to_string(groups) + " groups" +
               (variant.empty() ? "" : ", variant " + variant));
  const Call c = draw_prefill_call(w, variant, trial);
  expect_passes(c, run_cp_call(c, groups, CtaEmulator::Order::ascending));
}

TEST(SmallChunkContextParallel, GroupTokensCoverTheSequenceInOrder) {
  for (const std::int64_t length : {0, 1, 15, 16, 17, 300, 5709})
    for (const int groups : {3, 4, 9, 16}) {
      std::int64_t next = 0;
      for (int g = 0; g < groups; ++g) {
        const gp::GroupTokens t = gp::group_tokens(length, groups, g);
        EXPECT_EQ(t.from, next) << length << " tokens, group " << g << " of " << groups;
        EXPECT_GE(t.count, 0);
        EXPECT_TRUE(t.count % gp::kSmallChunk == 0 || t.from + t.count == length)
            << "only the last non-empty group ends inside a chunk";
        next = t.from + t.count;
      }
      EXPECT_EQ(next, length) << groups << " groups";
    }
}

#if defined(SMALL_CP_STAGGER)  // a folder whose groups grow (tuning.h)
TEST(SmallChunkContextParallel, GroupsGrowByTheStaggerAndTheLastIsTheLongest) {
  // Each group SMALL_CP_STAGGER chunks longer than the one before (one more for the last few,
  // where the chunks do not divide evenly), less stagger where the sequence is too short; so the
  // last group is the longest, and no group of any sequence of a call is longer than the bound the
  // correction's grid is sized by.
  const std::int64_t d = gp::kSmallCpStaggerChunks;
  for (const std::int64_t total : {1, 40, 300, 2107, 5709, 20000})
    for (const int groups : {2, 4, 8, 16}) {
      const std::int64_t bound = gp::longest_group_tokens(total, groups);
      for (const std::int64_t length : {total, total - 1, total / 2 + 7, total / 3, std::int64_t{17}}) {
        if (length < 0 || length > total) continue;
        const std::int64_t chunks = (length + gp::kSmallChunk - 1) / gp::kSmallChunk;
        const std::int64_t steps = std::int64_t{groups} * (groups - 1) / 2;
        const std::int64_t full = d * steps <= chunks ? d : chunks / steps;  // the stagger it gets
        std::int64_t before = -1;
        for (int g = 0; g < groups; ++g) {
          const gp::GroupTokens t = gp::group_tokens(length, groups, g);
          const std::int64_t c = (t.count + gp::kSmallChunk - 1) / gp::kSmallChunk;
          EXPECT_LE(t.count, bound) << length << " of " << total << ", group " << g;
          if (before >= 0) {
            EXPECT_GE(c - before, full) << length << " tokens, group " << g << " of " << groups;
            EXPECT_LE(c - before, full + 1) << length << " tokens, group " << g << " of " << groups;
          }
          before = c;
        }
      }
    }
}
#endif

TEST(SmallChunkContextParallel, MatchesTheReferenceAcrossGroups) {
  // 19 chunks in 3 groups (the last partial; at a stagger of 2, 4, 6 and 9 chunks); 5 groups of
  // one sequence of three chunks (two groups empty: identity maps, zero local states).
  expect_matches_reference(prefill_workload("three-groups", 300, 1), 3, "", 0);
  expect_matches_reference(prefill_workload("empty-groups", 40, 1), 5, "", 1);
  expect_matches_reference(prefill_workload("two-seqs", 230, 2), 4, "", 2);
  // Two groups: one scan step, straight into new_state. (Groups of more than one correction tile
  // with a partial last slice are the three-groups case above: 96 and 140 tokens at a stagger of 2,
  // more than a tile of 32 or 64 tokens.)
  expect_matches_reference(prefill_workload("two-groups", 140, 1), 2, "", 8);
  expect_matches_reference(prefill_workload("two-seqs-two-groups", 300, 2), 2, "", 9);
}

TEST(SmallChunkContextParallel, EmptySequencesEndAtZeroState) {
  expect_matches_reference(prefill_workload("zero-length", 150, 3), 3, "zero_length", 3);
}

TEST(SmallChunkContextParallel, MatchesTheReferenceUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def))
    expect_matches_reference(prefill_workload("variants", 120, 2), 3, v.name, 4);
}

TEST(SmallChunkContextParallel, InPlaceStateUpdateIsSafe) {
  // Only the map pass reads the state, only the scan (after it) writes new_state.
  const Call c = draw_prefill_call(prefill_workload("in-place", 100, 2), "", 5);
  expect_passes(c, test::run_in_place(c, [](const gp::PrefillArgs& args) {
                  run_cp(args, 4, CtaEmulator::Order::descending);
                }));
}

TEST(SmallChunkContextParallel, TokensOutsideEverySequenceGetZeroOutput) {
  const Call c = test::draw_prefill_call_with_outside_tokens(6);
  expect_passes(c, run_cp_call(c, 3, CtaEmulator::Order::ascending));
}

TEST(SmallChunkContextParallel, EitherThreadOrderGivesTheSameBits) {
  const Call c = draw_prefill_call(prefill_workload("orders", 90, 1), "", 7);
  const OutputSet up = run_cp_call(c, 4, CtaEmulator::Order::ascending);
  const OutputSet down = run_cp_call(c, 4, CtaEmulator::Order::descending);
  for (std::size_t i = 0; i < up.size(); ++i)
    EXPECT_TRUE(up[i].tensor.bytes_equal(down[i].tensor)) << up[i].name;
}

}  // namespace
}  // namespace kh
