/* The C interface of libkh_worker.so, through which kh's Python worker (python/kh_worker.py)
 * runs kh's own worker loop.
 *
 * The Python worker loads this library with ctypes and hands kh_worker_main three callbacks.
 * kh then does everything a `kh worker` does (the protocol on stdin/stdout, input generation, L2
 * flushes, poisoned outputs and red zones, the reference, the checks, CUPTI/event/graph timers)
 * and calls back into Python only to load a Python candidate or a definition's PyTorch
 * reference, and to call one. Built libraries (cuda/cpp candidates) load here as in `kh worker`,
 * so a paired gate between a Python and a CUDA candidate runs in one process.
 */
#ifndef KH_PYTHON_WORKER_H_
#define KH_PYTHON_WORKER_H_

#include <stdint.h>

#include <dlpack/dlpack.h>

#include "kh/abi.h"

/* What a Python call returns beyond the ABI's KH_OK / KH_ERROR_*: the verdict it implies.
 * Negative, so that no native candidate's status (a cudaError_t, say) reads as one of them. */
enum {
  KH_PYTHON_EXCEPTION = -1000,   /* the function raised; the message is the traceback */
  KH_PYTHON_WRONG_SHAPE = -1001, /* a value-returning function returned another shape */
  KH_PYTHON_WRONG_DTYPE = -1002, /* ... or another dtype */
  KH_PYTHON_WRONG_COUNT = -1003, /* ... or another number of outputs */
};

/* Flags of a call. */
enum {
  /* The call is timed: a value-returning function's results are dropped, not copied into the
   * harness's output tensors (the copy is not the candidate's work). */
  KH_PYTHON_CALL_TIMED = 1,
};

/* Loads a Python callable. `request_json`: {"kind": "candidate", "manifest": path of
 * python_candidate.json, "definition": {...}} or {"kind": "reference", "definition": {...}}, where
 * the definition is {"name", "inputs": [names], "scalar_inputs": [bool per input: shape null],
 * "outputs": [names], "reference": code}. Returns
 * a handle > 0, or 0 with a message (a traceback) in `error`. */
typedef int64_t (*kh_python_load_fn)(const char* request_json, char* error, uint64_t error_size);

/* Calls a loaded callable: `tensors` as the candidate ABI gives them (inputs, then outputs; a
 * scalar is a 0-d host tensor, an absent optional input has data NULL), on `stream`. Returns
 * KH_OK or a code above, with a message in `error`. */
typedef int (*kh_python_call_fn)(int64_t handle, const DLTensor* tensors, int32_t num_tensors,
                                 void* stream, int32_t flags, char* error, uint64_t error_size);

typedef void (*kh_python_release_fn)(int64_t handle);

/* Runs the worker loop on stdin/stdout until "quit" or the end of input; the exit code. */
KH_EXPORT int kh_worker_main(const char* backend, int32_t device, kh_python_load_fn load,
                             kh_python_call_fn call, kh_python_release_fn release);

#endif /* KH_PYTHON_WORKER_H_ */
