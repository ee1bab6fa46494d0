// Inputs of the DSA sparse attention operator. Each query token is a decode token of its own
// sequence: its context occupies distinct random pages of the paged cache, and its sparse indices
// are what the top-k indexer would hand over —
//   page_span: a context of at most 2048 tokens is selected whole, in order, then -1 padding
//              (the official set's "page-table representable" rows, spanning 1..32 pages);
//   scattered: a longer context, of which 2048 distinct positions are selected in random order.
// Workload hints: kh.pattern ("page_span" | "scattered"), kh.max_pages (page span of the longest
// row). Without hints the pattern is page_span over a random 1..32 pages.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kh/core/error.h"
#include "kh/gen/official_distribution.h"
#include "kh/gen/operator_inputs.h"
#include "kh/gen/operators/page_sampler.h"

namespace kh {
namespace {

constexpr std::int64_t kPageSize = 64;
constexpr std::int64_t kTopK = 2048;
constexpr std::int64_t kMaxSpanPages = 32;  // page_span rows of the official set
constexpr std::int64_t kScatteredMaxContext = 4 * kTopK;
constexpr double kExtremeQueryScale = 64.0;   // logits large enough to overflow exp()
constexpr std::int64_t kAllPaddingEvery = 4;  // all_padding: token 0 and every 4th
constexpr std::int64_t kDuplicateEvery = 4;   // duplicates: one valid entry in 4 repeats another
// Counter offsets of a token's structural stream, one range per use, far apart.
constexpr std::int64_t kShuffleOffset = 10'000'000;
constexpr std::int64_t kDuplicateOffset = 20'000'000;

class DsaAttentionInputs final : public OperatorInputs {
 public:
  bool is_structural(const std::string& input) const override { return input == "sparse_indices"; }

  std::vector<VariantInfo> variants() const override {
    return {
        {"all_padding",
         "token 0 and every 4th token select nothing (all -1): zero output, -inf lse"},
        {"scattered_padding",
         "-1 padding at random positions inside each row, not only at the end"},
        {"extreme", "queries x64: logits far beyond exp()'s float range, tests max-subtraction"},
        {"duplicates",
         "one valid entry in 4 repeats another valid entry of its row: the reference counts every "
         "copy, so a kernel that deduplicates (or keys rows by index) fails"},
    };
  }

  std::optional<double> default_scalar(const std::string& input) const override {
    if (input == "sm_scale") return 1.0 / std::sqrt(192.0);
    return std::nullopt;
  }

  std::optional<DrawRecipe> recipe(const GenContext& ctx, const std::string& name) const override {
    if (name == "sparse_indices") return std::nullopt;
    DrawRecipe r{DrawKind::kOfficial, ctx.stream(name)};  // caches and queries: N(0,1) in bf16
    if ((name == "q_nope" || name == "q_pe") && ctx.variant == "extreme") {
      r.kind = DrawKind::kScaledNormal;
      r.scale = kExtremeQueryScale;
    }
    return r;
  }

  void fill(const GenContext& ctx, const std::string& name, HostTensor& t, std::int64_t begin,
            std::int64_t end) const override {
    if (name != "sparse_indices") fail("dsa attention inputs: no host generator for '{}'", name);
    require_full_range(name, t, begin, end);
    fill_indices(ctx, t);
  }

 private:
  static void fill_indices(const GenContext& ctx, HostTensor& t) {
    const std::int64_t tokens = t.shape().at(0), width = t.shape().at(1);
    const std::int64_t num_pages = ctx.axis("num_pages");
    const RandomStream plan = ctx.structural_stream("sparse_indices/plan");
    const std::string pattern = ctx.hint_string("pattern", "page_span");
    if (pattern != "page_span" && pattern != "scattered")
      fail("workload {}: kh.pattern must be \"page_span\" or \"scattered\", got \"{}\"",
           ctx.workload.uuid, pattern);
    const std::int64_t max_pages = ctx.hint_int("max_pages", plan.uniform_int(0, 1, kMaxSpanPages));
    auto* out = t.data<std::int32_t>();
    std::fill(out, out + t.numel(), -1);

    for (std::int64_t tok = 0; tok < tokens; ++tok) {
      std::int32_t* row = out + tok * width;
      if (ctx.variant == "all_padding" && tok % kAllPaddingEvery == 0) continue;
      const RandomStream s = ctx.structural_stream("sparse_indices/" + std::to_string(tok));
      std::int64_t context;
      if (pattern == "scattered") {
        context = s.uniform_int(0, width + 1, std::max(width + 1, kScatteredMaxContext));
      } else {
        const std::int64_t hi = max_pages * kPageSize;
        context = tok == 0 ? s.uniform_int(0, hi - kPageSize + 1, hi) : s.uniform_int(0, 1, hi);
        context = std::min(context, width);
      }
      context = std::min(context, num_pages * kPageSize);
      if (context <= 0) continue;
      const std::int64_t pages_needed = (context + kPageSize - 1) / kPageSize;
      const auto pages = sample_distinct(s, 1'000, num_pages, pages_needed);
      auto slot = [&](std::int64_t position) {
        return static_cast<std::int32_t>(pages[position / kPageSize] * kPageSize +
                                         position % kPageSize);
      };
      if (context <= width) {
        for (std::int64_t j = 0; j < context; ++j) row[j] = slot(j);
      } else {
        const auto chosen = sample_distinct(s, 1'000'000, context, width);
        for (std::int64_t j = 0; j < width; ++j) row[j] = slot(chosen[j]);
      }
      if (ctx.variant == "scattered_padding") {
        // Shuffle the whole row so the -1 entries sit between valid ones.
        const auto order = sample_distinct(s, kShuffleOffset, width, width);
        std::vector<std::int32_t> copy(row, row + width);
        for (std::int64_t j = 0; j < width; ++j) row[j] = copy[order[j]];
      }
      if (ctx.variant == "duplicates") duplicate_entries(s, row, width);
    }
  }

  // Overwrites one valid entry in kDuplicateEvery with a copy of another valid entry of the row.
  static void duplicate_entries(const RandomStream& s, std::int32_t* row, std::int64_t width) {
    std::vector<std::int64_t> valid;
    for (std::int64_t j = 0; j < width; ++j)
      if (row[j] != -1) valid.push_back(j);
    const auto n = static_cast<std::int64_t>(valid.size());
    if (n < 2) return;
    for (std::int64_t k = 0; k < n / kDuplicateEvery; ++k) {
      const std::int64_t to = valid[s.uniform_int(kDuplicateOffset + 2 * k, 0, n - 1)];
      const std::int64_t from = valid[s.uniform_int(kDuplicateOffset + 2 * k + 1, 0, n - 1)];
      row[to] = row[from];
    }
  }
};

}  // namespace

std::unique_ptr<OperatorInputs> make_dsa_attention_inputs() {
  return std::make_unique<DsaAttentionInputs>();
}

}  // namespace kh
