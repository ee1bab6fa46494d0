// The split GDN prefill route (kernels/gdn_prefill/route_split.cuh: chunk_prep_kernel writes
// every chunk's key-only tiles to the workspace, the chunked kernel's kPrepared form walks the
// chain on them), its CUDA kernel bodies compiled for the host and run by the CTA emulator
// (tests/cuda_on_host.h). The records hold exactly what the fused kernel computes in shared
// memory, so the split route must give the chunked route's bits (unless a candidate splits the
// key columns over two warps, which sums in another order), which the chunked route's own
// emulation test ties to the reference; it is checked against the reference as well, over empty
// sequences, partial chunks and a sequence that starts mid-chunk (the record slots), and a
// planted error in one record must show in the outputs.
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_prep.cuh"
#include "gdn_prefill_emulation.h"
#include "kh/check/checker.h"
#include "route_chunked.cuh"
#include "route_context_parallel.cuh"

namespace khk::gdn_prefill {
// The kernels' `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
constexpr int kLargestSmem =
    std::max({ChunkSmem<16>::kBytes, ChunkSmem<32>::kBytes, ChunkSmem<64>::kBytes,
              ChainSmem<16>::kBytes, ChainSmem<32>::kBytes, ChainSmem<64>::kBytes,
              PrepSmem::kBytes});
alignas(16) unsigned char smem[kLargestSmem];
}  // namespace khk::gdn_prefill

#include "gdn_prefill_route_emulation.h"  // after the kernels' shared memory

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using test::CtaEmulator;

// Whether the chain gives the chunked route's bits: with the key columns split over two warps
// (CHAIN_KSPLIT) it sums them in another order.
template <int kVS>
constexpr bool chain_gives_chunked_bits() {
  return gp::kKeySplit<kVS, true> == 1;
}

/// Every CTA of the chunked route (kPrepared: the split route's two kernels) in grid order;
/// `plant` (>= 0) flips one element of that record's -W before the chain reads it.
template <int kVS, bool kPrepared>
OutputSet run_route(const test::PrefillCall& c, CtaEmulator::Order order, long plant = -1) {
  if constexpr (!kPrepared) {
    return test::run_chunked<kVS>(c, order);
  } else {
    OutputSet out = test::poisoned_outputs(c);
    const gp::PrefillArgs args = test::prefill_args(c.inputs, out);
    std::vector<unsigned char> records = test::run_prep(args, order);
    if (plant >= 0) {
      auto* w = reinterpret_cast<__nv_bfloat16*>(records.data() + plant * gp::ChunkRecord::kBytes +
                                                 gp::ChunkRecord::kW);
      w[5 * gp::kLdD + 17] = __float2bfloat16(__bfloat162float(w[5 * gp::kLdD + 17]) + 0.5f);
    }
    gp::GroupArgs ga;
    ga.records = records.data();
    CtaEmulator chain(gp::kChunkThreads<kVS, true>, gp::ChainSmem<kVS>::kBytes, order, gp::smem);
    const std::int64_t ctas = args.num_seqs * gp::kVHeads * (gp::kHeadSize / kVS);
    for (std::int64_t cta = 0; cta < ctas; ++cta)
      chain.run([&](test::EmulatedCta&) {
        gp::chunked_prefill_kernel<kVS, gp::ChunkPass::kFused, true>(args, ga);
      }, cta);
    return out;
  }
}

template <int kVS>
void expect_split_matches(const Workload& w, const std::string& variant, std::int64_t trial) {
  SCOPED_TRACE("workload " + w.uuid + " at " + std::to_string(kVS) + " value columns per CTA" +
               (variant.empty() ? "" : ", variant " + variant));
  const test::PrefillCall c = test::draw_prefill_call(w, variant, trial);
  const OutputSet split = run_route<kVS, true>(c, CtaEmulator::Order::ascending);
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, split, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ", max rel "
                          << r.max_relative_error << ")";
  if (!chain_gives_chunked_bits<kVS>()) return;
  const OutputSet fused = run_route<kVS, false>(c, CtaEmulator::Order::ascending);
  for (std::size_t i = 0; i < split.size(); ++i)
    EXPECT_TRUE(split[i].tensor.bytes_equal(fused[i].tensor)) << split[i].name;
}

TEST(SplitPrefillEmulation, GivesTheChunkedRoutesBitsAndMatchesTheReference) {
  // One partial chunk; two chunks; three sequences, so the later ones start mid-chunk.
  expect_split_matches<64>(test::prefill_workload("one-tile", 9, 1), "", 0);
  expect_split_matches<32>(test::prefill_workload("two-chunks", 100, 1), "", 1);
  expect_split_matches<16>(test::prefill_workload("three-seqs", 150, 3), "", 2);
}

TEST(SplitPrefillEmulation, HandlesEmptySequencesAndAbsentState) {
  expect_split_matches<32>(test::prefill_workload("zero-length", 140, 3), "zero_length", 3);
  expect_split_matches<64>(test::prefill_workload("absent", 70, 2), "absent_state", 4);
}

TEST(SplitPrefillEmulation, TokensOutsideEverySequenceAndMidChunkStarts) {
  // cu_seqlens from 5 to T - 3: the first sequence starts mid-chunk (its record slots start at
  // 0 anyway), tokens before and after every sequence belong to none and get zero output.
  test::PrefillCall c = test::draw_prefill_call(test::prefill_workload("outside", 150, 2), "", 7);
  auto* cu = c.inputs.at("cu_seqlens").data<std::int64_t>();
  ASSERT_EQ(cu[0], 0);
  cu[0] = 5;
  cu[2] = 147;
  ASSERT_LT(cu[0], cu[1]);
  ASSERT_LT(cu[1], cu[2]);
  c.reference = run_cpu_reference(c.def, c.axes, c.inputs);
  const OutputSet split = run_route<32, true>(c, CtaEmulator::Order::ascending);
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, split, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ")";
  const auto* out = split.at("output").data<__nv_bfloat16>();
  for (int t : {0, 4, 147, 149})
    for (int i = 0; i < gp::kVHeads * gp::kHeadSize; i += 37)
      EXPECT_EQ(__bfloat162float(out[t * gp::kVHeads * gp::kHeadSize + i]), 0.0f) << "token " << t;
}

TEST(SplitPrefillEmulation, EitherThreadOrderGivesTheSameBits) {
  const test::PrefillCall c = test::draw_prefill_call(test::prefill_workload("orders", 80, 2), "", 5);
  const OutputSet up = run_route<32, true>(c, CtaEmulator::Order::ascending);
  const OutputSet down = run_route<32, true>(c, CtaEmulator::Order::descending);
  for (std::size_t i = 0; i < up.size(); ++i)
    EXPECT_TRUE(up[i].tensor.bytes_equal(down[i].tensor)) << up[i].name;
}

TEST(SplitPrefillEmulation, AnErrorInOneRecordReachesTheOutputs) {
  // Record 1 of the first sequence's head 0 is its second chunk: a planted error in its -W must
  // change the outputs, or the chain is not reading the records it claims to.
  const test::PrefillCall c = test::draw_prefill_call(test::prefill_workload("plant", 100, 1), "", 6);
  const OutputSet clean = run_route<64, true>(c, CtaEmulator::Order::ascending);
  const OutputSet planted = run_route<64, true>(c, CtaEmulator::Order::ascending, 1 * gp::kVHeads);
  EXPECT_FALSE(clean.at("output").bytes_equal(planted.at("output")));
  EXPECT_FALSE(clean.at("new_state").bytes_equal(planted.at("new_state")));
}

}  // namespace
}  // namespace kh
