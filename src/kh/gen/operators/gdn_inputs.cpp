// Inputs of the Gated Delta Net decode and prefill operators, as Qwen3-Next feeds them.
//
// q and k are L2-normalised per head: the model normalises them before the operator, and with
// standard-normal keys the recurrence diverges (the definition's own PyTorch reference returns
// non-finite outputs on long sequences). A_log and dt_bias lie in the ranges of the model's
// initialisation (A in [1, 16], dt in [1e-3, 1e-1]); the state has the magnitude a state of
// normalised keys settles at. cu_seqlens splits total_seq_len into num_seqs non-empty sequences
// of random lengths (zero-length ones only in the zero_length variant), or into the lengths of the
// workload hint kh.seq_lens.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kh/core/error.h"
#include "kh/gen/official_distribution.h"
#include "kh/gen/operator_inputs.h"

namespace kh {
namespace {

constexpr int kHeadDim = 128;
constexpr double kStateStd = 0.1;  // settled state entries of unit-norm keys and N(0,1) values
constexpr double kALogMin = 0.0;   // log(1)
constexpr double kALogMax = 2.772588722239781;  // log(16)
constexpr double kDtBiasMin = -6.907;           // softplus^-1(1e-3)
constexpr double kDtBiasMax = -2.252;           // softplus^-1(1e-1)
constexpr double kExtremeValueScale = 1e3;
constexpr double kExtremeGateStd = 10.0;
// Length weights are integers in [1, kLengthWeightRange]: lengths vary by up to that factor.
constexpr std::int64_t kLengthWeightRange = 8;

class GdnInputs final : public OperatorInputs {
 public:
  explicit GdnInputs(bool prefill) : prefill_(prefill) {}

  bool is_structural(const std::string& input) const override { return input == "cu_seqlens"; }

  std::vector<VariantInfo> variants() const override {
    std::vector<VariantInfo> v = {
        {"absent_state", "no initial state (state = None): the operator starts from zeros"},
        {"extreme", "values and states x1e3, gate pre-activations with std 10 (g near 0 and 1)",
         kExtremeValueScale},
    };
    if (prefill_)
      v.push_back({"zero_length", "some sequences have length 0 (their new_state must be zero)",
                   1.0, "num_seqs", 2});
    return v;
  }

  bool is_present(const GenContext& ctx, const std::string& input) const override {
    return !(input == "state" && ctx.variant == "absent_state");
  }

  std::optional<double> default_scalar(const std::string& input) const override {
    if (input == "scale") return 1.0 / std::sqrt(static_cast<double>(kHeadDim));
    return std::nullopt;
  }

  std::optional<DrawRecipe> recipe(const GenContext& ctx, const std::string& name) const override {
    const bool extreme = ctx.variant == "extreme";
    DrawRecipe r{DrawKind::kOfficial, ctx.stream(name)};  // v, a, b: N(0,1) as officially
    if (name == "q" || name == "k") {
      r.kind = DrawKind::kUnitVectors;
      r.group = kHeadDim;
    } else if (name == "state" || (name == "v" && extreme)) {
      r.kind = DrawKind::kScaledNormal;
      r.scale = (name == "state" ? kStateStd : 1.0) * (extreme ? kExtremeValueScale : 1.0);
    } else if (name == "A_log" || name == "dt_bias") {
      r.kind = DrawKind::kScaledUniform;
      r.lo = name == "A_log" ? kALogMin : kDtBiasMin;
      r.hi = name == "A_log" ? kALogMax : kDtBiasMax;
    } else if (name == "a" && extreme) {
      r.kind = DrawKind::kScaledNormal;
      r.scale = kExtremeGateStd;
    } else if (name == "cu_seqlens") {
      return std::nullopt;
    }
    return r;
  }

  void fill(const GenContext& ctx, const std::string& name, HostTensor& t, std::int64_t begin,
            std::int64_t end) const override {
    if (name != "cu_seqlens") fail("gdn inputs: no host generator for '{}'", name);
    require_full_range(name, t, begin, end);
    fill_cu_seqlens(ctx, t, ctx.stream(name));
  }

 private:
  static void fill_cu_seqlens(const GenContext& ctx, HostTensor& t, const RandomStream& s) {
    const std::int64_t n = t.numel() - 1;
    const std::int64_t total = ctx.axis("total_seq_len");
    if (n < 0) fail("workload {}: len_cu_seqlens must be >= 1", ctx.workload.uuid);
    if (n == 0 && total > 0)
      fail("workload {}: {} tokens but no sequence (num_seqs = 0)", ctx.workload.uuid, total);
    std::vector<bool> empty(static_cast<std::size_t>(n), false);
    if (ctx.variant == "zero_length") {
      if (n < 2) fail("workload {}: variant zero_length needs num_seqs >= 2", ctx.workload.uuid);
      for (std::int64_t i = 0; i < n; i += 3) empty[i] = true;  // the first and every third
    }
    if (ctx.workload.hints.contains("seq_lens")) {
      fill_given_lengths(ctx, t, empty);
      return;
    }
    std::int64_t slots = 0;
    for (std::int64_t i = 0; i < n; ++i) slots += !empty[i];
    // Every non-empty sequence gets one token, then the rest is split by integer weights; if
    // there are fewer tokens than sequences, the last ones stay empty.
    std::vector<std::int64_t> len(static_cast<std::size_t>(n), 0);
    std::vector<std::int64_t> weight(static_cast<std::size_t>(n), 0);
    std::int64_t weight_sum = 0, base = std::min(total, slots) > 0 ? 1 : 0;
    std::int64_t given = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (empty[i] || given >= total) continue;
      len[i] = base;
      given += base;
      weight[i] = s.uniform_int(i, 1, kLengthWeightRange);
      weight_sum += weight[i];
    }
    const std::int64_t rest = total - given;
    std::int64_t assigned = 0;
    for (std::int64_t i = 0; i < n && weight_sum > 0; ++i) {
      const std::int64_t extra = rest * weight[i] / weight_sum;
      len[i] += extra;
      assigned += extra;
    }
    for (std::int64_t i = 0; assigned < rest; i = (i + 1) % n)
      if (weight[i] > 0) ++len[i], ++assigned;
    std::int64_t acc = 0;
    t.set(0, 0);
    for (std::int64_t i = 0; i < n; ++i) t.set(i + 1, static_cast<double>(acc += len[i]));
  }

  // kh.seq_lens: the workload's sequence lengths, fixed (num_seqs non-negative integers summing to
  // total_seq_len), for shapes a random split would not give. Under zero_length each emptied
  // sequence's tokens move to the next sequence that keeps its own (the last kept one before it
  // when none follows), so the total stays.
  static void fill_given_lengths(const GenContext& ctx, HostTensor& t,
                                 const std::vector<bool>& empty) {
    const Json& given = ctx.workload.hints.at("seq_lens");
    const std::int64_t n = t.numel() - 1, total = ctx.axis("total_seq_len");
    const auto bad = [&](const std::string& why) {
      fail("workload {}: hint kh.seq_lens {}: {}", ctx.workload.uuid, why, given.dump());
    };
    if (!given.is_array() || static_cast<std::int64_t>(given.size()) != n)
      bad(fmt::format("must be an array of num_seqs = {} lengths", n));
    std::vector<std::int64_t> len;
    std::int64_t sum = 0;
    for (const Json& x : given) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 0) bad("must hold integers >= 0");
      len.push_back(x.get<std::int64_t>());
      sum += len.back();
    }
    if (sum != total) bad(fmt::format("must sum to total_seq_len = {}, not {}", total, sum));
    for (std::int64_t i = 0; i < n; ++i) {
      if (!empty[static_cast<std::size_t>(i)] || len[static_cast<std::size_t>(i)] == 0) continue;
      std::int64_t to = -1;
      for (std::int64_t j = i + 1; j < n && to < 0; ++j)
        if (!empty[static_cast<std::size_t>(j)]) to = j;
      for (std::int64_t j = i - 1; j >= 0 && to < 0; --j)
        if (!empty[static_cast<std::size_t>(j)]) to = j;
      len[static_cast<std::size_t>(to)] += len[static_cast<std::size_t>(i)];
      len[static_cast<std::size_t>(i)] = 0;
    }
    std::int64_t acc = 0;
    t.set(0, 0);
    for (std::int64_t i = 0; i < n; ++i)
      t.set(i + 1, static_cast<double>(acc += len[static_cast<std::size_t>(i)]));
  }

  bool prefill_;
};

}  // namespace

std::unique_ptr<OperatorInputs> make_gdn_inputs(bool prefill) {
  return std::make_unique<GdnInputs>(prefill);
}

}  // namespace kh
