// GDN prefill's chunked routes run by the CTA emulator, for their emulation tests: the chunked
// route (route_chunked.cuh), the split route's prep kernel (chunk_prep.cuh), and the
// context-parallel passes (route_context_parallel.cuh) on the chunked kernel (kPrepared false)
// or on the split route's prepared chain over chunk records (true). Include after the kernel
// headers and after defining the kernels' `extern __shared__` array khk::gdn_prefill::smem.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cta_emulator.h"
#include "gdn_prefill_emulation.h"

namespace kh::test {

/// Every CTA of the chunked route at value slabs of kVS columns, in grid order.
template <int kVS>
OutputSet run_chunked(const PrefillCall& c, CtaEmulator::Order order) {
  namespace gp = khk::gdn_prefill;
  OutputSet out = poisoned_outputs(c);
  const gp::PrefillArgs args = prefill_args(c.inputs, out);
  CtaEmulator emulator(kVS * 2, gp::ChunkSmem<kVS>::kBytes, order, gp::smem);
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * (gp::kHeadSize / kVS);
  for (std::int64_t cta = 0; cta < ctas; ++cta)
    emulator.run([&](EmulatedCta&) { gp::chunked_prefill_kernel<kVS>(args); }, cta);
  return out;
}

/// The prep kernel's records of a call: every (slot, head) CTA, in grid order (last first with
/// `reversed`). The workspace starts as NaN, so a record part a reader uses but the prep never
/// wrote shows.
inline std::vector<unsigned char> run_prep(const khk::gdn_prefill::PrefillArgs& args,
                                           CtaEmulator::Order order, bool reversed = false) {
  namespace gp = khk::gdn_prefill;
  std::vector<unsigned char> records(gp::record_workspace_bytes(args.total_tokens, args.num_seqs),
                                     0xff);
  CtaEmulator prep(gp::kPrepThreads, gp::PrepSmem::kBytes, order, gp::smem);
  const std::int64_t n = gp::record_slots(args.total_tokens, args.num_seqs) * gp::kVHeads;
  for (std::int64_t i = 0; i < n; ++i)
    prep.run([&](EmulatedCta&) { gp::chunk_prep_kernel(args, records.data()); },
             reversed ? n - 1 - i : i);
  return records;
}

/// The route's four launches in order, `groups` groups per sequence (after the prep kernel into
/// `records` when kPrepared). In place: new_state is the state itself, and each launch runs its
/// CTAs last first (the device promises no order), so the last group ends before group 0 begins.
template <int kVS, bool kPrepared = false>
OutputSet run_context_parallel(const PrefillCall& c, int groups, CtaEmulator::Order order,
                               bool in_place = false) {
  namespace gp = khk::gdn_prefill;
  OutputSet out = poisoned_outputs(c);
  InputSet inputs = c.inputs.clone();
  gp::PrefillArgs args = prefill_args(inputs, out);
  if (in_place) args.new_state = inputs.at("state").data<float>();
  std::vector<float> workspace(
      static_cast<std::size_t>(gp::context_parallel_workspace_floats(args.num_seqs, groups)),
      std::nanf(""));
  std::vector<unsigned char> records;
  const auto grid = [&](CtaEmulator& emulator, std::int64_t n, auto&& kernel) {
    for (std::int64_t i = 0; i < n; ++i)
      emulator.run([&](EmulatedCta&) { kernel(); }, in_place ? n - 1 - i : i);
  };
  if constexpr (kPrepared) records = run_prep(args, order, in_place);
  const std::int64_t maps = args.num_seqs * gp::kVHeads * groups * gp::kStateFloats;
  const gp::GroupArgs ga{groups, workspace.data(), workspace.data() + maps,
                         workspace.data() + 2 * maps, kPrepared ? records.data() : nullptr};
  const std::int64_t ctas = args.num_seqs * gp::kVHeads * (gp::kHeadSize / kVS) * groups;
  const std::int64_t scan_ctas = args.num_seqs * gp::kVHeads * (gp::kHeadSize / gp::kScanRows);
  using Smem = std::conditional_t<kPrepared, gp::ChainSmem<kVS>, gp::ChunkSmem<kVS>>;
  CtaEmulator chunks(kVS * 2, Smem::kBytes, order, gp::smem);
  CtaEmulator scan(gp::kScanThreads, gp::kScanSmemBytes, order, gp::smem);
  using P = gp::ChunkPass;
  grid(chunks, ctas, [&] { gp::chunked_prefill_kernel<kVS, P::kTransfer, kPrepared>(args, ga); });
  grid(chunks, ctas, [&] { gp::chunked_prefill_kernel<kVS, P::kLocal, kPrepared>(args, ga); });
  grid(scan, scan_ctas, [&] { gp::context_parallel_scan_kernel(args, ga); });
  grid(chunks, ctas, [&] { gp::chunked_prefill_kernel<kVS, P::kFromEntry, kPrepared>(args, ga); });
  if (in_place)
    std::memcpy(out.at("new_state").bytes(), inputs.at("state").bytes(),
                inputs.at("state").nbytes());
  return out;
}

}  // namespace kh::test
