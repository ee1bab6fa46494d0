// The token-serial GDN prefill route (kernels/gdn_prefill/token_serial_cta.h), its per-CTA
// program run on the host by the CTA emulator, against the fp64 CPU reference: shapes of the
// official small regime, every adversarial variant, extra shapes (one token, staging-block edges,
// three sequences), outputs poisoned before the call, the in-place state update, and both fiber
// orders compared bit for bit (a missing barrier changes what a thread reads). Built once per
// knob configuration tests/CMakeLists.txt lists (SERIAL_WARPS, SERIAL_LANES, SERIAL_ROUND,
// SERIAL_BLOCK as -D flags).
#include <cmath>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "cta_emulator.h"
#include "gdn_prefill_emulation.h"
#include "kh/check/checker.h"
#include "token_serial_cta.h"

namespace kh {
namespace {

namespace gp = khk::gdn_prefill;
using Call = test::PrefillCall;
using test::draw_prefill_call;
using test::prefill_args;
using test::prefill_workload;

/// Every CTA of the route's grid, in grid order.
void run_grid(const gp::PrefillArgs& args, test::CtaEmulator::Order order) {
  test::CtaEmulator emulator(gp::kSerialThreads, sizeof(gp::SerialSmem), order);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * gp::kSerialTilesPerHead;
  for (std::int64_t cta = 0; cta < ctas; ++cta)
    emulator.run([&](test::EmulatedCta& c) { gp::token_serial_cta(args, cta, c); });
}

/// The route's outputs for one call, every output poisoned before it.
OutputSet run_token_serial(const test::PrefillCall& c, test::CtaEmulator::Order order) {
  OutputSet out = test::poisoned_outputs(c);
  run_grid(prefill_args(c.inputs, out), order);
  return out;
}

void expect_matches_reference(const Workload& w, const std::string& variant = "",
                              std::int64_t trial = 0) {
  SCOPED_TRACE("workload " + w.uuid + (variant.empty() ? "" : " variant " + variant));
  const Call c = draw_prefill_call(w, variant, trial);
  const OutputSet out =
      run_token_serial(c, test::CtaEmulator::Order::ascending);
  // fp32 throughout, like the reference: the official rule and the tighter reference grade.
  for (const CheckOptions& options : {official_options(c.def, false), test::reference_grade(c.def)}) {
    const CheckResult r = check_outputs(c.def, c.inputs, c.reference, out, options);
    EXPECT_TRUE(r.passed()) << "at atol " << options.tolerance.atol << ", rtol "
                            << options.tolerance.rtol << ": " << r.message << " (max abs "
                            << r.max_absolute_error << ", max rel " << r.max_relative_error << ")";
  }
}

TEST(TokenSerialPrefill, MatchesTheReferenceOnSmallOfficialShapes) {
  // Shapes of the official <= 256-token regime: one short sequence, two sequences, and one
  // sequence over two staging blocks.
  expect_matches_reference(prefill_workload("six-tokens", 6, 1));
  expect_matches_reference(prefill_workload("two-seqs", 28, 2), "", 1);
  expect_matches_reference(prefill_workload("two-blocks", 49, 1), "", 2);
}

TEST(TokenSerialPrefill, MatchesTheReferenceOnExtraShapes) {
  expect_matches_reference(prefill_workload("one-token", 1, 1));
  expect_matches_reference(prefill_workload("block-edge", gp::kSerialBlock, 1));
  expect_matches_reference(prefill_workload("block-edge-plus-one", gp::kSerialBlock + 1, 1));
  expect_matches_reference(prefill_workload("three-seqs", 70, 3), "", 3);
}

TEST(TokenSerialPrefill, MatchesTheReferenceUnderEveryVariant) {
  const Definition def = test::shipped_definition(test::kGdnPrefill);
  for (const auto& v : InputGenerator::variants(def))
    expect_matches_reference(prefill_workload("variants", 40, 3), v.name, 7);
}

TEST(TokenSerialPrefill, InPlaceStateUpdateIsSafe) {
  // new_state may be state itself: each lane reads its part of a row before it writes it.
  const Call c = draw_prefill_call(prefill_workload("in-place", 20, 2), "", 4);
  const OutputSet out = test::run_in_place(
      c, [](const gp::PrefillArgs& args) { run_grid(args, test::CtaEmulator::Order::descending); });
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, out, test::reference_grade(c.def));
  EXPECT_TRUE(r.passed()) << r.message;
}

TEST(TokenSerialPrefill, TokensOutsideEverySequenceGetZeroOutput) {
  // Only cu_seqlens[-1] == T is required of a call: tokens before the first sequence (and, in a
  // shorter cu_seqlens, after the last) belong to none, and the reference leaves them zero.
  const Call c = test::draw_prefill_call_with_outside_tokens(6);
  const OutputSet out =
      run_token_serial(c, test::CtaEmulator::Order::ascending);
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, out, test::reference_grade(c.def));
  EXPECT_TRUE(r.passed()) << r.message;
}

TEST(TokenSerialPrefill, EitherThreadOrderGivesTheSameBits) {
  // Threads run one at a time between barriers; reversing their order changes what a thread
  // reads of another's writes unless a barrier separates them.
  const Call c = draw_prefill_call(prefill_workload("orders", gp::kSerialBlock + 5, 2), "", 5);
  const OutputSet up =
      run_token_serial(c, test::CtaEmulator::Order::ascending);
  const OutputSet down =
      run_token_serial(c, test::CtaEmulator::Order::descending);
  for (std::size_t i = 0; i < up.size(); ++i)
    EXPECT_TRUE(up[i].tensor.bytes_equal(down[i].tensor)) << up[i].name;
}

}  // namespace
}  // namespace kh
