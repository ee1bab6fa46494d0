/* libkhk, the kernel-harness kernel library: one C ABI entry per operator of the FlashInfer
 * contest definitions, for NVIDIA Hopper (sm_90a).
 *
 * Every entry follows the kh candidate ABI (include/kh/abi.h): the definition's inputs in their
 * declared order, then its outputs, as DLPack tensors (device memory; scalars as 0-d host
 * tensors; an absent optional input with data == NULL), the stream to launch on, and a workspace.
 * An entry returns KH_OK or an error code; <entry>_error() returns the message of the calling
 * thread's last error. No entry allocates, synchronises or copies to the host, so every call is
 * CUDA-graph capturable.
 */
#ifndef KHK_H_
#define KHK_H_

#include "kh/abi.h"

/* gdn_decode_qk4_v8_d128_k_last: q k v state A_log a dt_bias b scale | output new_state.
 * Any batch size >= 1 (0 is a no-op); state may be absent (zeros) or alias new_state (in-place
 * update). No workspace. Design: kernels/gdn_decode/ROOFLINE.md. */
KH_EXPORT int khk_gdn_decode_qk4_v8_d128_k_last(const DLTensor* tensors, int32_t num_tensors,
                                                void* stream, void* workspace,
                                                uint64_t workspace_bytes);
KH_EXPORT const char* khk_gdn_decode_qk4_v8_d128_k_last_error(void);

/* gdn_prefill_qk4_v8_d128_k_last: q k v state A_log a dt_bias b cu_seqlens scale | output
 * new_state. Any token count and number of sequences >= 1 with cu_seqlens non-decreasing on the
 * device (never read by the host); sequences of length 0 get a zero new_state; tokens outside
 * every sequence get zero output; state may be absent (zeros) or alias new_state. The workspace
 * (its size from _workspace_bytes, for the same tensors; data pointers may be NULL there) holds
 * the context-parallel route's group state maps: with less, or none, few long sequences take the
 * chunked route and stay correct. Design: kernels/gdn_prefill/ROOFLINE.md. */
KH_EXPORT int khk_gdn_prefill_qk4_v8_d128_k_last(const DLTensor* tensors, int32_t num_tensors,
                                                 void* stream, void* workspace,
                                                 uint64_t workspace_bytes);
KH_EXPORT uint64_t khk_gdn_prefill_qk4_v8_d128_k_last_workspace_bytes(const DLTensor* tensors,
                                                                      int32_t num_tensors);
KH_EXPORT const char* khk_gdn_prefill_qk4_v8_d128_k_last_error(void);

/* dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64: q_nope q_pe ckv_cache kpe_cache
 * sparse_indices sm_scale | output lse. Any num_tokens >= 1 (0 is a no-op) and num_pages; -1 or
 * out-of-range indices are padding, duplicates count twice; a token with no valid index gets
 * output 0 and lse -inf. The workspace (its size from _workspace_bytes, for the same tensors;
 * data pointers may be NULL there) holds split partials: with less, or none, the call splits
 * each token over fewer CTAs and stays correct. Design: kernels/dsa_attention/ROOFLINE.md. */
KH_EXPORT int khk_dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64(
    const DLTensor* tensors, int32_t num_tensors, void* stream, void* workspace,
    uint64_t workspace_bytes);
KH_EXPORT uint64_t khk_dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64_workspace_bytes(
    const DLTensor* tensors, int32_t num_tensors);
KH_EXPORT const char* khk_dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64_error(void);

#endif /* KHK_H_ */
