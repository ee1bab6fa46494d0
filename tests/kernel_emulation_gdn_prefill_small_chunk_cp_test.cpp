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

TEST(SmallChunkContextParallel, MatchesTheReferenceAcrossGroups) {
  // 19 chunks in 3 groups (7, 7, 5 chunks, the last partial); 5 groups of one sequence of three
  // chunks (groups 3 and 4 empty: identity maps, zero local states).
  expect_matches_reference(prefill_workload("three-groups", 300, 1), 3, "", 0);
  expect_matches_reference(prefill_workload("empty-groups", 40, 1), 5, "", 1);
  expect_matches_reference(prefill_workload("two-seqs", 230, 2), 4, "", 2);
  // Two groups: one scan step, straight into new_state. (Groups of more than one correction tile
  // with a partial last slice are the three-groups case above: 112 and 76 tokens > kCorrectTokens.)
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
