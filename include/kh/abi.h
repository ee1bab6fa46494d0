/* kh candidate ABI, version 1.
 *
 * A candidate is a shared library exporting one entry point in destination-passing style:
 *
 *   KH_EXPORT int my_kernel(const DLTensor* tensors, int32_t num_tensors,
 *                           void* stream, void* workspace, uint64_t workspace_bytes);
 *
 * `tensors` holds the definition's inputs in their declared order, then its outputs, as DLPack
 * (>= 1.1) tensors: compact row-major (strides NULL), device memory for the cuda backend, host
 * memory for the cpu backend. A scalar input is a 0-d tensor in HOST memory (ndim 0, read
 * *(T*)data). An absent optional input (e.g. GDN `state` = None) has data == NULL. `stream` is
 * the cudaStream_t to launch on (NULL for the cpu backend); `workspace` is a harness-provided
 * device buffer of `workspace_bytes` bytes, valid for the call only.
 *
 * The entry returns KH_OK or an error code. It must not allocate, synchronise, or copy to the
 * host: the call must be capturable in a CUDA graph. A candidate that needs scratch memory
 * exports `<entry>_workspace_bytes` with the same tensor list (data pointers may be NULL then)
 * and receives that much workspace. It may export `<entry>_error` returning a message for the
 * last non-zero status.
 */
#ifndef KH_ABI_H_
#define KH_ABI_H_

#include <stdint.h>

#include <dlpack/dlpack.h>

#define KH_ABI_VERSION 1

#ifdef __cplusplus
#define KH_EXTERN_C extern "C"
#else
#define KH_EXTERN_C
#endif
#define KH_EXPORT KH_EXTERN_C __attribute__((visibility("default")))

enum {
  KH_OK = 0,
  KH_ERROR_INVALID_ARGUMENT = 1, /* a shape, dtype or scalar the candidate does not support */
  KH_ERROR_LAUNCH = 2,           /* a kernel launch failed */
  KH_ERROR_INTERNAL = 3,
};

typedef int (*kh_entry_fn)(const DLTensor* tensors, int32_t num_tensors, void* stream,
                           void* workspace, uint64_t workspace_bytes);
typedef uint64_t (*kh_workspace_fn)(const DLTensor* tensors, int32_t num_tensors);
typedef const char* (*kh_error_fn)(void);

#endif /* KH_ABI_H_ */
