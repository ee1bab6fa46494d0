// The split route in context-parallel groups (kernels/gdn_prefill, knob SPLIT_CP=1): the prep
// kernel, then the context-parallel passes on the prepared chain, run by the CTA emulator
// (tests/gdn_prefill_route_emulation.h). The passes run the same stages on the same operands as the
// chunked kernel's, so they must give the context-parallel route's bits, and match the
// reference, across groups, empty sequences and an in-place state update in any CTA order.
#include "cuda_on_host.h"  // first: the builtins the kernel body uses

#include <algorithm>

#include <gtest/gtest.h>

#include "chunk_prep.cuh"
#include "gdn_prefill_emulation.h"
#include "kh/check/checker.h"
#include "route_chunked.cuh"
#include "route_context_parallel.cuh"

namespace khk::gdn_prefill {
// The kernels' `extern __shared__` array: one buffer, as the emulator runs one CTA at a time.
constexpr int kLargestSmem = std::max({ChunkSmem<64>::kBytes, ChainSmem<64>::kBytes,
                                       PrepSmem::kBytes, kScanSmemBytes});
alignas(16) unsigned char smem[kLargestSmem];
}  // namespace khk::gdn_prefill

#include "gdn_prefill_route_emulation.h"  // after the kernels' shared memory

namespace kh {
namespace {

using test::CtaEmulator;

void expect_prepared_groups_match(const Workload& w, int groups, const std::string& variant,
                                  std::int64_t trial, bool in_place = false) {
  SCOPED_TRACE("workload " + w.uuid + " in " + std::to_string(groups) + " groups" +
               (variant.empty() ? "" : ", variant " + variant) + (in_place ? ", in place" : ""));
  const test::PrefillCall c = test::draw_prefill_call(w, variant, trial);
  const OutputSet prepared =
      test::run_context_parallel<64, true>(c, groups, CtaEmulator::Order::ascending, in_place);
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, prepared, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ")";
  const OutputSet chunked =
      test::run_context_parallel<64, false>(c, groups, CtaEmulator::Order::ascending, in_place);
  for (std::size_t i = 0; i < prepared.size(); ++i)
    EXPECT_TRUE(prepared[i].tensor.bytes_equal(chunked[i].tensor)) << prepared[i].name;
}

TEST(SplitContextParallelEmulation, GivesTheContextParallelRoutesBits) {
  // 5 chunks in 3 groups (2, 2, 1 chunks), the last one partial; more groups than a short
  // sequence has chunks; an empty sequence.
  expect_prepared_groups_match(test::prefill_workload("five-chunks", 300, 1), 3, "", 0);
  expect_prepared_groups_match(test::prefill_workload("two-seqs", 200, 2), 4, "", 1);
  expect_prepared_groups_match(test::prefill_workload("zero-length", 150, 3), 2, "zero_length", 2);
}

TEST(SplitContextParallelEmulation, InPlaceStateUpdateIsSafeInAnyCtaOrder) {
  expect_prepared_groups_match(test::prefill_workload("in-place", 140, 1), 4, "", 5, true);
}

}  // namespace
}  // namespace kh
