// The chunked GDN prefill route (kernels/gdn_prefill/route_chunked.cuh, the library's route),
// its CUDA kernel body compiled for the host and run by the CTA emulator (tests/cuda_on_host.h:
// threadIdx, barriers, shuffles; the mma.sync and ldmatrix fragments of cuda_on_host.cpp) against
// the fp64 CPU reference, at the official tolerance: shapes of one and several chunks, a partial
// last tile, three sequences, the adversarial variants, both thread orders bit for bit. The route
// has passed every official workload on an H200, so this also checks the emulation of its PTX.
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "gdn_prefill_emulation.h"
#include "kh/check/checker.h"
#include "chunk_prep.cuh"
#include "route_chunked.cuh"
#include "route_context_parallel.cuh"

namespace khk::gdn_prefill {
// The kernel's `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
constexpr int kLargestChunkSmem = std::max({ChunkSmem<16>::kBytes, ChunkSmem<32>::kBytes,
                                            ChunkSmem<64>::kBytes, ChunkSmem<128>::kBytes,
                                            PrepSmem::kBytes, kScanSmemBytes});
alignas(16) unsigned char smem[kLargestChunkSmem];
}  // namespace khk::gdn_prefill

#include "gdn_prefill_route_emulation.h"  // after the kernels' shared memory

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using test::CtaEmulator;

using test::run_chunked;

template <int kVS>
void expect_matches_reference(const Workload& w, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + " at " + std::to_string(kVS) + " value columns per CTA" +
               (variant.empty() ? "" : ", variant " + variant));
  const test::PrefillCall c = test::draw_prefill_call(w, variant, trial);
  const OutputSet out = run_chunked<kVS>(c, CtaEmulator::Order::ascending);
  const CheckResult r = check_outputs(c.def, c.inputs, c.reference, out, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ", max rel "
                          << r.max_relative_error << ")";
}

TEST(ChunkedPrefillEmulation, MatchesTheReferenceWithinAndAcrossChunks) {
  expect_matches_reference<64>(test::prefill_workload("one-tile", 9, 1));
  expect_matches_reference<64>(test::prefill_workload("two-chunks", 100, 1), "", 1);
  expect_matches_reference<128>(test::prefill_workload("three-seqs", 90, 3), "", 2);
}

TEST(ChunkedPrefillEmulation, MatchesTheReferenceUnderTheVariants) {
  for (const char* v : {"absent_state", "zero_length"})
    expect_matches_reference<32>(test::prefill_workload("variants", 40, 2), v, 3);
}

using test::run_context_parallel;

template <int kVS = 64>
void expect_context_parallel_matches(const Workload& w, int groups, const std::string& variant,
                                     std::int64_t trial, bool in_place = false) {
  SCOPED_TRACE("workload " + w.uuid + " in " + std::to_string(groups) + " groups" +
               (variant.empty() ? "" : ", variant " + variant) + (in_place ? ", in place" : ""));
  const test::PrefillCall c = test::draw_prefill_call(w, variant, trial);
  const OutputSet out =
      run_context_parallel<kVS>(c, groups, CtaEmulator::Order::ascending, in_place);
  const CheckResult r = check_outputs(c.def, c.inputs, c.reference, out, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ", max rel "
                          << r.max_relative_error << ")";
}

TEST(ContextParallelPrefillEmulation, MatchesTheReferenceAcrossGroups) {
  // 5 chunks in 3 groups (2, 2, 1 chunks), the last one partial; then more groups than a short
  // sequence has chunks (empty groups map the state to itself).
  expect_context_parallel_matches(test::prefill_workload("five-chunks", 300, 1), 3, "", 0);
  expect_context_parallel_matches(test::prefill_workload("two-seqs", 200, 2), 4, "", 1);
  expect_context_parallel_matches(test::prefill_workload("zero-length", 150, 3), 2, "zero_length", 2);
  expect_context_parallel_matches<128>(test::prefill_workload("one-slab", 130, 1), 2, "", 3);
}

TEST(ContextParallelPrefillEmulation, InPlaceStateUpdateIsSafeInAnyCtaOrder) {
  // The last group's CTA writes new_state (= state) before group 0's reads its entry.
  expect_context_parallel_matches(test::prefill_workload("in-place", 140, 1), 4, "", 5, true);
}

TEST(ChunkedPrefillEmulation, EitherThreadOrderGivesTheSameBits) {
  const test::PrefillCall c = test::draw_prefill_call(test::prefill_workload("orders", 70, 1), "", 4);
  const OutputSet up = run_chunked<64>(c, CtaEmulator::Order::ascending);
  const OutputSet down = run_chunked<64>(c, CtaEmulator::Order::descending);
  for (std::size_t i = 0; i < up.size(); ++i)
    EXPECT_TRUE(up[i].tensor.bytes_equal(down[i].tensor)) << up[i].name;
}

}  // namespace
}  // namespace kh
