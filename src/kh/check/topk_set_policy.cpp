#include "kh/check/topk_set_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kh/check/element_rule.h"
#include "kh/core/error.h"
#include "kh/ref/dsa_index_cache.h"

namespace kh {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kPaddingScore = -std::numeric_limits<float>::infinity();

struct IndexerInputs {
  const HostTensor& q;
  const HostTensor& cache;
  const HostTensor& weights;
  const HostTensor& seq_lens;
  const HostTensor& block_table;
  std::int64_t batch;
  std::int64_t max_pages;  // block_table columns
  std::int64_t num_pages;  // pages in the K cache
};

const HostTensor& input_of(const InputSet& inputs, const char* name, DType dtype,
                           std::size_t rank) {
  const HostTensor& t = inputs.at(name);
  if (t.dtype() != dtype || t.shape().size() != rank)
    fail("top-k check: input '{}' is {} {}, expected a rank-{} {} tensor", name,
         dtype_name(t.dtype()), shape_string(t.shape()), rank, dtype_name(dtype));
  return t;
}

IndexerInputs indexer_inputs(const InputSet& inputs) {
  IndexerInputs in{input_of(inputs, "q_index_fp8", DType::kFloat8E4M3, 3),
                   input_of(inputs, "k_index_cache_fp8", DType::kInt8, 4),
                   input_of(inputs, "weights", DType::kFloat32, 2),
                   input_of(inputs, "seq_lens", DType::kInt32, 1),
                   input_of(inputs, "block_table", DType::kInt32, 2),
                   0,
                   0,
                   0};
  in.batch = in.q.shape()[0];
  in.max_pages = in.block_table.shape()[1];
  in.num_pages = in.cache.shape()[0];
  const Shape q_shape{in.batch, dsa::kIndexHeads, dsa::kIndexHeadDim};
  const Shape cache_shape{in.num_pages, dsa::kPageSize, 1, dsa::kIndexHeadDim + 4};
  if (in.q.shape() != q_shape || in.cache.shape() != cache_shape ||
      in.weights.shape() != Shape{in.batch, dsa::kIndexHeads} ||
      in.seq_lens.shape() != Shape{in.batch} || in.block_table.shape()[0] != in.batch)
    fail(
        "top-k check: inconsistent indexer inputs (q {}, cache {}, weights {}, seq_lens {}, "
        "block_table {})",
        shape_string(in.q.shape()), shape_string(in.cache.shape()),
        shape_string(in.weights.shape()), shape_string(in.seq_lens.shape()),
        shape_string(in.block_table.shape()));
  return in;
}

// Why a selected slot is not a token of its row's sequence; empty when it is one.
std::string unreachable_reason(const IndexerInputs& in, std::int64_t b, std::int32_t slot) {
  const std::int64_t page = slot / dsa::kPageSize;
  const std::int64_t offset = slot % dsa::kPageSize;
  const std::int32_t* pages = in.block_table.data<std::int32_t>() + b * in.max_pages;
  const std::int32_t* first = std::find(pages, pages + in.max_pages, page);
  if (first == pages + in.max_pages)
    return fmt::format("its page {} is not in block_table row {}", page, b);
  const std::int64_t column = first - pages;
  const std::int64_t position = column * dsa::kPageSize + offset;
  const std::int32_t seq_len = in.seq_lens.data<std::int32_t>()[b];
  if (position >= seq_len)
    return fmt::format(
        "its page {} is block_table[{}, {}], so it is token {} of a sequence of "
        "seq_lens[{}] = {} tokens",
        page, b, column, position, b, seq_len);
  return {};
}

CheckResult invalid_indices(std::string message) {
  CheckResult r;
  r.status = EvalStatus::kIncorrectNumerical;
  r.max_absolute_error = kInf;
  r.max_relative_error = kInf;
  r.matched_ratio = 0;
  r.message = std::move(message);
  r.terminal = true;
  return r;
}

std::string rows_string(const std::vector<std::int64_t>& rows) {
  return fmt::format("[{}]", fmt::join(rows, ", "));
}

// Step 2 of the official check: reachability in every row first, then duplicates.
std::string validate(const IndexerInputs& in, const HostTensor& indices) {
  const std::int64_t k = indices.shape()[1];
  const std::int32_t* data = indices.data<std::int32_t>();
  std::vector<std::int64_t> bad_rows;
  std::string first;
  for (std::int64_t b = 0; b < in.batch; ++b) {
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int32_t slot = data[b * k + j];
      if (slot < 0) continue;
      const std::string reason = unreachable_reason(in, b, slot);
      if (reason.empty()) continue;
      if (first.empty())
        first = fmt::format(
            "out-of-range/unreachable index {} at topk_indices[{}, {}] in batch "
            "row {}: {}",
            slot, b, j, b, reason);
      bad_rows.push_back(b);
      break;
    }
  }
  if (!bad_rows.empty())
    return fmt::format("{} (batch rows with such indices: {})", first, rows_string(bad_rows));

  for (std::int64_t b = 0; b < in.batch; ++b) {
    std::vector<std::pair<std::int32_t, std::int64_t>> row;  // (slot, column)
    for (std::int64_t j = 0; j < k; ++j)
      if (data[b * k + j] >= 0) row.emplace_back(data[b * k + j], j);
    std::sort(row.begin(), row.end());
    for (std::size_t i = 1; i < row.size(); ++i) {
      if (row[i].first != row[i - 1].first) continue;
      if (first.empty())
        first = fmt::format(
            "duplicate index {} at topk_indices[{}, {}] and [{}, {}] in batch "
            "row {}",
            row[i].first, b, row[i - 1].second, b, row[i].second, b);
      bad_rows.push_back(b);
      break;
    }
  }
  if (!bad_rows.empty())
    return fmt::format("{} (batch rows with duplicates: {})", first, rows_string(bad_rows));
  return {};
}

std::vector<std::int32_t> valid_slots(const std::int32_t* row, std::int64_t k) {
  std::vector<std::int32_t> slots;
  for (std::int64_t j = 0; j < k; ++j)
    if (row[j] >= 0) slots.push_back(row[j]);
  std::sort(slots.begin(), slots.end());
  return slots;
}

struct ScoredSlot {
  float score;
  std::int32_t slot;  // negative: padding
};

// Descending, NaN first, as torch's descending sort orders them.
bool before(const ScoredSlot& a, const ScoredSlot& b) {
  const bool a_nan = std::isnan(a.score);
  const bool b_nan = std::isnan(b.score);
  if (a_nan != b_nan) return a_nan;
  return !a_nan && a.score > b.score;
}

class RowScorer {
 public:
  RowScorer(const IndexerInputs& in, std::int64_t b) : in_(in), b_(b) {}

  // The row's entries with their scores, sorted descending. Scores are computed in double and
  // rounded to float32, the precision the official evaluator compares in.
  std::vector<ScoredSlot> sorted_scores(const std::int32_t* row, std::int64_t k) {
    std::vector<ScoredSlot> scored(static_cast<std::size_t>(k));
    for (std::int64_t j = 0; j < k; ++j)
      scored[j] = {row[j] < 0 ? kPaddingScore : score(row[j]), row[j]};
    std::sort(scored.begin(), scored.end(), before);
    return scored;
  }

 private:
  float score(std::int32_t slot) {
    const auto [it, inserted] = memo_.try_emplace(slot, 0.0f);
    if (inserted) {
      if (slot / dsa::kPageSize >= in_.num_pages)
        fail(
            "top-k check: slot {} of batch row {} lies in page {}, outside the K cache's {} "
            "pages (the inputs are inconsistent)",
            slot, b_, slot / dsa::kPageSize, in_.num_pages);
      it->second = static_cast<float>(dsa::index_score(in_.q, in_.weights, in_.cache, b_, slot));
    }
    return it->second;
  }

  const IndexerInputs& in_;
  std::int64_t b_;
  std::unordered_map<std::int32_t, float> memo_;  // reference and solution sets mostly overlap
};

bool shared_non_finite(float x, float y) {
  return (std::isnan(x) && std::isnan(y)) ||
         (std::isinf(x) && std::isinf(y) && std::signbit(x) == std::signbit(y));
}

std::string describe(const ScoredSlot& s) {
  return s.slot < 0 ? fmt::format("{} (padding)", s.score)
                    : fmt::format("{} (index {})", s.score, s.slot);
}

}  // namespace

bool topk_check_scores_rows(const Definition& def, const OutputSet& reference,
                            const OutputSet& solution) {
  if (def.outputs.empty()) return false;
  const HostTensor* expected = reference.find(def.outputs[0].name);
  const HostTensor* actual = solution.find(def.outputs[0].name);
  if (!expected || !actual || expected->dtype() != DType::kInt32 || expected->shape().size() != 2 ||
      actual->shape() != expected->shape() || actual->dtype() != expected->dtype())
    return false;
  const std::int64_t rows = expected->shape()[0], k = expected->shape()[1];
  for (std::int64_t b = 0; b < rows; ++b)
    if (valid_slots(expected->data<std::int32_t>() + b * k, k) !=
        valid_slots(actual->data<std::int32_t>() + b * k, k))
      return true;
  return false;
}

CheckResult check_topk_set(const Definition& def, const InputSet& inputs,
                           const OutputSet& reference, const OutputSet& solution,
                           const CheckOptions& options) {
  if (def.outputs.empty()) fail("definition {} declares no outputs", def.name);
  const std::string& name = def.outputs[0].name;
  const HostTensor* expected = reference.find(name);
  if (!expected) fail("definition {}: the reference outputs have no tensor '{}'", def.name, name);
  if (expected->dtype() != DType::kInt32 || expected->shape().size() != 2)
    fail("top-k check: the reference '{}' is {} {}, expected int32 [batch, topk]", name,
         dtype_name(expected->dtype()), shape_string(expected->shape()));
  const HostTensor* actual = solution.find(name);
  if (!actual) {
    CheckResult missing;
    missing.status = EvalStatus::kRuntimeError;
    missing.matched_ratio = 0;
    missing.message = fmt::format("output '{}': the solution did not produce it", name);
    missing.terminal = true;
    return missing;
  }
  // Shape and dtype exactly as the default rule reports them.
  if (actual->shape() != expected->shape() || actual->dtype() != expected->dtype())
    return check_tensor(name, *actual, *expected, options);

  const IndexerInputs in = indexer_inputs(inputs);
  const std::int64_t k = expected->shape()[1];
  if (expected->shape()[0] != in.batch)
    fail("top-k check: '{}' has {} rows for a batch of {}", name, expected->shape()[0], in.batch);
  if (std::string invalid = validate(in, *actual); !invalid.empty())
    return invalid_indices(std::move(invalid));

  std::int64_t fails = 0;
  bool non_finite_mismatch = false;
  float max_abs = 0;
  float max_rel = 0;
  std::string first_failure;
  std::string count_mismatch;  // the first row whose valid-entry count differs: the likely cause
  for (std::int64_t b = 0; b < in.batch; ++b) {
    const std::int32_t* ref_row = expected->data<std::int32_t>() + b * k;
    const std::int32_t* sol_row = actual->data<std::int32_t>() + b * k;
    const std::vector<std::int32_t> ref_set = valid_slots(ref_row, k);
    const std::vector<std::int32_t> sol_set = valid_slots(sol_row, k);
    // The same set gives the same sorted scores: every position matches with zero error.
    if (ref_set == sol_set) continue;
    if (ref_set.size() != sol_set.size() && count_mismatch.empty())
      count_mismatch =
          fmt::format("; batch row {}: the solution selects {} valid indices, the reference {}", b,
                      sol_set.size(), ref_set.size());

    RowScorer scorer(in, b);
    const std::vector<ScoredSlot> ref_sorted = scorer.sorted_scores(ref_row, k);
    const std::vector<ScoredSlot> sol_sorted = scorer.sorted_scores(sol_row, k);
    for (std::int64_t r = 0; r < k; ++r) {
      const float x = sol_sorted[r].score;
      const float y = ref_sorted[r].score;
      if (shared_non_finite(x, y)) continue;
      const bool finite = std::isfinite(x) && std::isfinite(y);
      ElementComparison c{};
      if (finite) {
        c = compare_element(x, y, options.tolerance);
        max_abs = std::max(max_abs, c.abs_error);
        max_rel = std::max(max_rel, c.rel_error);
        if (!c.fails) continue;
      } else {
        non_finite_mismatch = true;
      }
      if (fails++ > 0) continue;
      const std::string why =
          finite ? fmt::format("abs error {} > atol {} and rel error {} > rtol {}", c.abs_error,
                               options.tolerance.atol, c.rel_error, options.tolerance.rtol)
                 : std::string("exactly one side is padding or non-finite");
      first_failure = fmt::format(
          "output '{}', batch row {}, rank {} of the score-sorted selection: solution score {} "
          "vs reference score {} ({})",
          name, b, r, describe(sol_sorted[r]), describe(ref_sorted[r]), why);
    }
  }

  CheckResult result;
  result.max_absolute_error = non_finite_mismatch ? kInf : max_abs;
  result.max_relative_error = non_finite_mismatch ? kInf : max_rel;
  result.matched_ratio = matched_ratio(fails, in.batch * k);
  if (result.matched_ratio < options.tolerance.required_matched_ratio) {
    result.status = EvalStatus::kIncorrectNumerical;
    result.message =
        fmt::format("{}{}; {} of {} sorted scores beyond tolerance, matched ratio {} < required {}",
                    first_failure, count_mismatch, fails, in.batch * k, result.matched_ratio,
                    options.tolerance.required_matched_ratio);
  }
  return result;
}

}  // namespace kh
