// KH_HD marks functions that the host and CUDA device code share (generators, number formats),
// so that both sides compute bit-identical values from one definition.
#pragma once

#if defined(__CUDACC__)
#define KH_HD __host__ __device__ __forceinline__
#else
#define KH_HD inline
#endif
