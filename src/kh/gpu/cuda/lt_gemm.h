// Dense GEMMs through cuBLASLt, loaded with dlopen (kh links no CUDA math library): the tensor-core
// rates `kh ceilings` states kernel targets against. D (bf16, m x n) = A^T B with A, B of the
// given precision (the "TN" layout FP8 requires), fp32 accumulation.
#pragma once

#include <memory>
#include <string>

#include <cuda_runtime_api.h>

namespace kh {

enum class GemmPrecision { kBf16, kFp8 };

class LtGemm {
 public:
  /// Loads libcublasLt and prepares one m x n x k problem (operands allocated here). Throws
  /// kh::Error saying what failed.
  LtGemm(GemmPrecision precision, int m, int n, int k, cudaStream_t stream);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  /// Enqueues the GEMM; 0 on success, else the cuBLAS status (its name in `why`).
  int run(std::string& why);
  double flops() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kh
