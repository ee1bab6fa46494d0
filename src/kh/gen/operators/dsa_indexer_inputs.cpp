// Inputs of the DSA top-k indexer. The K cache uses deep_gemm's FP8 page layout exactly as the
// official evaluator builds it (fib_eval_spec §2.5): K ~ N(0,1) in bf16, per-token scale =
// max(|K|, 1e-4) / 448, values e4m3(K * (1/scale)) in float32; per page 64x128 FP8 bytes, then 64
// float32 scales. The block table holds distinct pages (as a paged allocator hands them out) and
// the sequence lengths are consistent with max_num_pages: kh.long_rows rows (default 1, as in the
// official set) span all max_num_pages pages, the others hold at most 2048 tokens.
#include <algorithm>

#include "kh/core/error.h"
#include "kh/gen/official_distribution.h"
#include "kh/gen/operator_inputs.h"
#include "kh/gen/operators/page_sampler.h"
#include "kh/ref/dsa_index_layout.h"

namespace kh {
namespace {

using dsa::kIndexHeadDim;
using dsa::kPageSize;
constexpr std::int64_t kTiePoolSize = 16;         // ties: keys repeat from a pool of 16 vectors
constexpr double kNearTieStep = 1.0 / (1 << 20);  // near_ties: scales differ by ~1e-6 relative
constexpr std::int64_t kZeroLengthEvery = 3;

class DsaIndexerInputs final : public OperatorInputs {
 public:
  bool is_structural(const std::string& input) const override {
    return input == "seq_lens" || input == "block_table";
  }

  std::vector<VariantInfo> variants() const override {
    return {
        {"ties", "keys repeat from a pool of 16 vectors: exact score ties across the top-k cut"},
        {"near_ties", "as ties, with per-token scales 1e-6 apart: near-ties within tolerance"},
        {"zero_length", "row 0 and every 3rd row have seq_len 0 (all -1 output)"},
    };
  }

  std::optional<DrawRecipe> recipe(const GenContext& ctx, const std::string& name) const override {
    if (name == "seq_lens" || name == "block_table") return std::nullopt;
    DrawRecipe r{DrawKind::kOfficial, ctx.stream(name)};  // q_index_fp8 and weights: official
    if (name == "k_index_cache_fp8") {
      r.kind = DrawKind::kIndexerKeyPages;
      const bool ties = ctx.variant == "ties" || ctx.variant == "near_ties";
      r.pool = ties ? kTiePoolSize : 0;
      r.near_tie_step = ctx.variant == "near_ties" ? kNearTieStep : 0.0;
    }
    return r;
  }

  void fill(const GenContext& ctx, const std::string& name, HostTensor& t, std::int64_t begin,
            std::int64_t end) const override {
    require_full_range(name, t, begin, end);
    if (name == "seq_lens") {
      const auto lens = seq_lens(ctx);
      for (std::size_t b = 0; b < lens.size(); ++b) t.set(static_cast<std::int64_t>(b), lens[b]);
    } else if (name == "block_table") {
      fill_block_table(ctx, t);
    } else {
      fail("dsa indexer inputs: no host generator for '{}'", name);
    }
  }

 private:
  static std::vector<std::int64_t> seq_lens(const GenContext& ctx) {
    const std::int64_t batch = ctx.axis("batch_size"), pages = ctx.axis("max_num_pages");
    const RandomStream s = ctx.structural_stream("seq_lens");
    const std::int64_t capacity = pages * kPageSize;
    const std::int64_t long_rows = std::clamp<std::int64_t>(ctx.hint_int("long_rows", 1), 0, batch);
    // The long rows are spread over the batch at positions drawn once per workload.
    const auto long_positions = sample_distinct(s, 1'000, batch, long_rows);
    std::vector<std::int64_t> lens(static_cast<std::size_t>(batch));
    for (std::int64_t b = 0; b < batch; ++b) {
      const bool is_long =
          std::find(long_positions.begin(), long_positions.end(), b) != long_positions.end();
      lens[b] =
          is_long ? s.uniform_int(b, std::max<std::int64_t>(1, capacity - kPageSize + 1), capacity)
                  : s.uniform_int(b, 1, std::min<std::int64_t>(capacity, dsa::kTopK));
      if (ctx.variant == "zero_length" && b % kZeroLengthEvery == 0) lens[b] = 0;
    }
    return lens;
  }

  static void fill_block_table(const GenContext& ctx, HostTensor& t) {
    const std::int64_t batch = ctx.axis("batch_size"), pages = ctx.axis("max_num_pages");
    const std::int64_t num_pages = ctx.axis("num_pages");
    const RandomStream s = ctx.structural_stream("block_table");
    if (pages > num_pages)
      fail("workload {}: max_num_pages {} exceeds num_pages {}", ctx.workload.uuid, pages,
           num_pages);
    if (batch * pages <= num_pages) {
      const auto all = sample_distinct(s, 0, num_pages, batch * pages);
      for (std::int64_t i = 0; i < batch * pages; ++i) t.set(i, static_cast<double>(all[i]));
      return;
    }
    for (std::int64_t b = 0; b < batch; ++b) {  // too few pages to keep rows disjoint
      const auto row = sample_distinct(s, b * pages * 4, num_pages, pages);
      for (std::int64_t p = 0; p < pages; ++p) t.set(b * pages + p, static_cast<double>(row[p]));
    }
  }
};

}  // namespace

std::unique_ptr<OperatorInputs> make_dsa_indexer_inputs() {
  return std::make_unique<DsaIndexerInputs>();
}

}  // namespace kh
