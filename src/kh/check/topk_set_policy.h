// The DSA top-k indexer policy (official DsaTopkIndexerEvaluator, fib_eval_spec.md §3.7): the
// selected token slots are judged as a set, by their recomputed scores, so order and
// tie-breaking do not matter.
//
// Only the first output (`topk_indices`, int32 [B, topk]) is checked:
//  1. shape, then dtype, against the reference (INCORRECT_SHAPE / INCORRECT_DTYPE);
//  2. validity, per batch row: a negative entry is padding; a non-negative slot i must have its
//     page i/64 in that row of block_table (the first matching column s is used) and token
//     position s*64 + i%64 < seq_lens[b]; then no non-negative slot may repeat. A violation is
//     INCORRECT_NUMERICAL with errors inf, at once;
//  3. scores: the indexer score of every selected slot is recomputed (kh::dsa::index_score),
//     padding scores -inf, each row's scores are sorted descending for the solution and the
//     reference separately and compared position by position: equal infinities (and NaN pairs)
//     match, exactly one non-finite side fails and makes the reported errors inf (a solution
//     with fewer or more valid entries than the reference), finite pairs use the element rule.
//     The matched ratio is over all B*topk positions.
#pragma once

#include "kh/check/check_result.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh {

/// Whether check_topk_set will recompute scores, i.e. read q, the K cache and the weights: true
/// when the output tensors are comparable (present, same shape and dtype) and some batch row's
/// set of valid slots differs from the reference's. Validity (step 2) reads only seq_lens and
/// block_table.
bool topk_check_scores_rows(const Definition& def, const OutputSet& reference,
                            const OutputSet& solution);

CheckResult check_topk_set(const Definition& def, const InputSet& inputs,
                           const OutputSet& reference, const OutputSet& solution,
                           const CheckOptions& options);

}  // namespace kh
