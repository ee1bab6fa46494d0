// Call costs of the two DeepSeek-V3.2 sparse-attention operators. Both are gathers from a paged
// cache, so their minimal traffic depends on which cache rows or pages the call actually reaches:
// a row or page reached by several tokens or batch rows needs to come from HBM only once.
#include <cstdint>
#include <string>
#include <vector>

#include "kh/core/error.h"
#include "kh/ref/reference_call.h"
#include "kh/roofline/call_cost_models.h"

namespace kh::roofline {
namespace {

constexpr std::int32_t kPadding = -1;

}  // namespace

// dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64. Per token t, S_t = the valid entries of
// sparse_indices[t] (every -1 is padding, wherever it sits); U = the union of the S_t.
//
// Bytes: every cache row in U once, ckv (512 bf16) + kpe (64 bf16) = 1152 B; the whole of q_nope
// and q_pe (16 x 576 bf16 = 18,432 B per token) and of sparse_indices (the kernel must read all of
// it to find the valid entries; 8192 B per token); output (16 x 512 bf16) and lse (16 fp32)
// written. sm_scale is a host scalar passed by value: no HBM traffic.
//
// FLOPs (bf16 tensor-core math): per token, per head, per DISTINCT row r of S_t, the 576-long
// logit dot product q_nope.ckv[r] + q_pe.kpe[r] (2 x 576) and the 512-long accumulation p.ckv[r]
// into the output (2 x 512): 2 x (576 + 512) = 2176. A row listed twice in S_t counts twice in the
// reference's softmax but its logit and value are the same, so a kernel can weight it instead of
// recomputing it: the minimal count is per distinct row. Softmax exponentials, the max and the
// normalisation are O(heads x rows) and not counted (the operator is far below the bf16 ridge).
CallCost dsa_sparse_attention_cost(const Definition& def, const AxisValues& axes,
                                   const InputSet& inputs) {
  const std::int64_t tokens = ref::axis_value(def, axes, "num_tokens");
  const std::int64_t heads = ref::axis_value(def, axes, "num_qo_heads");
  const std::int64_t ckv_dim = ref::axis_value(def, axes, "head_dim_ckv");
  const std::int64_t kpe_dim = ref::axis_value(def, axes, "head_dim_kpe");
  const std::int64_t topk = ref::axis_value(def, axes, "topk");
  const std::int64_t cache_rows =
      ref::axis_value(def, axes, "num_pages") * ref::axis_value(def, axes, "page_size");

  const HostTensor& indices = inputs.at("sparse_indices");
  ref::require_tensor(def.name + ": input 'sparse_indices'", indices, DType::kInt32,
                      {tokens, topk});
  const auto* index = indices.data<std::int32_t>();

  // last_token[r]: the last token whose S_t contained row r (-1: none yet). Tokens are visited in
  // order, so "last_token[r] != t" means r is new to S_t, and "== -1" that it is new to U.
  std::vector<std::int64_t> last_token(static_cast<std::size_t>(cache_rows), -1);
  std::int64_t distinct_rows = 0;  // |U|
  std::int64_t token_rows = 0;     // sum over t of the distinct rows of S_t
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t j = 0; j < topk; ++j) {
      const std::int64_t r = index[t * topk + j];
      if (r == kPadding) continue;
      if (r < 0 || r >= cache_rows)
        fail("{}: sparse_indices[{}, {}] = {} is neither the padding -1 nor a cache row in [0, {})",
             def.name, t, j, r, cache_rows);
      if (last_token[r] == t) continue;
      if (last_token[r] == -1) ++distinct_rows;
      last_token[r] = t;
      ++token_rows;
    }

  const double row_bytes = static_cast<double>(ckv_dim) * element_bytes(def, "ckv_cache") +
                           static_cast<double>(kpe_dim) * element_bytes(def, "kpe_cache");
  CallCost cost;
  cost.kind = FlopKind::kBf16;
  cost.bytes = static_cast<double>(distinct_rows) * row_bytes +
               declared_bytes(def, axes, "q_nope") + declared_bytes(def, axes, "q_pe") +
               declared_bytes(def, axes, "sparse_indices") + declared_bytes(def, axes, "output") +
               declared_bytes(def, axes, "lse");
  cost.flops = static_cast<double>(token_rows) * static_cast<double>(heads) * 2.0 *
               static_cast<double>(ckv_dim + kpe_dim + ckv_dim);
  cost.note = fmt::format(
      "{} distinct cache rows of {} B; {} (token, distinct row) pairs x {} heads x 2*({}+{}) FLOP",
      distinct_rows, row_bytes, token_rows, heads, ckv_dim + kpe_dim, ckv_dim);
  return cost;
}

// dsa_topk_indexer_fp8_h64_d128_topk2048_ps64. Row b (L_b = seq_lens[b] tokens) reaches the
// pages block_table[b, 0 .. ceil(L_b / 64) - 1]; the reference reads nothing else of the table or
// the cache, and skips rows with L_b = 0 entirely.
//
// Bytes: every reachable page once, whole (64 x 132 B = 8448 B: the deep_gemm layout keeps a
// page's FP8 values and its scales in one block, and a kernel streams pages); the reachable
// block-table entries (4 B each, per row: the table is per row even where pages are shared); for
// each row with L_b > 0, its q (64 x 128 fp8 = 8192 B) and weights (64 fp32 = 256 B); all of
// seq_lens; the whole topk_indices output (2048 int32 per row, -1 padding included) written.
//
// FLOPs (fp8 tensor-core math): per row, per token j < L_b, the 64 head dot products of length 128
// (2 x 64 x 128 = 16,384). The ReLU, the weighting and the head sum (~3 x 64 per token) run on
// the CUDA cores and the top-k selection is not arithmetic: neither is counted.
CallCost dsa_topk_indexer_cost(const Definition& def, const AxisValues& axes,
                               const InputSet& inputs) {
  const std::int64_t batch = ref::axis_value(def, axes, "batch_size");
  const std::int64_t table_width = ref::axis_value(def, axes, "max_num_pages");
  const std::int64_t num_pages = ref::axis_value(def, axes, "num_pages");
  const std::int64_t page_size = ref::axis_value(def, axes, "page_size");
  const std::int64_t heads = ref::axis_value(def, axes, "num_index_heads");
  const std::int64_t head_dim = ref::axis_value(def, axes, "index_head_dim");
  const std::int64_t record_bytes = ref::axis_value(def, axes, "head_dim_with_scale");
  if (page_size <= 0) fail("{}: axis 'page_size' is {}, expected > 0", def.name, page_size);

  const HostTensor& seq_lens = inputs.at("seq_lens");
  const HostTensor& block_table = inputs.at("block_table");
  ref::require_tensor(def.name + ": input 'seq_lens'", seq_lens, DType::kInt32, {batch});
  ref::require_tensor(def.name + ": input 'block_table'", block_table, DType::kInt32,
                      {batch, table_width});
  const auto* length = seq_lens.data<std::int32_t>();
  const auto* table = block_table.data<std::int32_t>();

  std::vector<bool> page_reached(static_cast<std::size_t>(num_pages), false);
  std::int64_t distinct_pages = 0, table_entries = 0, active_rows = 0, scored_tokens = 0;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t len = length[b];
    if (len < 0 || len > table_width * page_size)
      fail("{}: seq_lens[{}] = {} is outside [0, max_num_pages * page_size = {}]", def.name, b, len,
           table_width * page_size);
    if (len == 0) continue;
    ++active_rows;
    scored_tokens += len;
    const std::int64_t pages = (len + page_size - 1) / page_size;
    table_entries += pages;
    for (std::int64_t i = 0; i < pages; ++i) {
      const std::int64_t page = table[b * table_width + i];
      if (page < 0 || page >= num_pages)
        fail("{}: block_table[{}, {}] = {} (reached by seq_lens[{}] = {}) is not a page in [0, {})",
             def.name, b, i, page, b, len, num_pages);
      if (!page_reached[page]) {
        page_reached[page] = true;
        ++distinct_pages;
      }
    }
  }

  const double page_bytes =
      static_cast<double>(page_size * record_bytes) * element_bytes(def, "k_index_cache_fp8");
  const double row_bytes =
      static_cast<double>(heads * head_dim) * element_bytes(def, "q_index_fp8") +
      static_cast<double>(heads) * element_bytes(def, "weights");
  CallCost cost;
  cost.kind = FlopKind::kFp8;
  cost.bytes = static_cast<double>(distinct_pages) * page_bytes +
               static_cast<double>(active_rows) * row_bytes +
               static_cast<double>(table_entries) * element_bytes(def, "block_table") +
               declared_bytes(def, axes, "seq_lens") + declared_bytes(def, axes, "topk_indices");
  cost.flops = static_cast<double>(scored_tokens) * 2.0 * static_cast<double>(heads * head_dim);
  cost.note = fmt::format(
      "{} distinct pages of {} B; {} rows with seq_len > 0; {} block-table entries; {} scored "
      "tokens x 2*{}*{} FLOP",
      distinct_pages, page_bytes, active_rows, table_entries, scored_tokens, heads, head_dim);
  return cost;
}

}  // namespace kh::roofline
