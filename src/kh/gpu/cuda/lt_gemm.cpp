#include "kh/gpu/cuda/lt_gemm.h"

#include <dlfcn.h>

#include <cublasLt.h>

#include "kh/core/error.h"

namespace kh {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;
// Operand bytes: a non-zero pattern (zeros would let the tensor cores idle on power).
constexpr int kOperandPattern = 0x3c;

struct LtApi {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
};

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail("cuBLASLt GEMM: {} failed: {}", what, cudaGetErrorString(e));
}

}  // namespace

struct LtGemm::Impl {
  void* library = nullptr;
  LtApi api{};
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, d_layout = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void *a = nullptr, *b = nullptr, *d = nullptr, *workspace = nullptr;
  cudaStream_t stream = nullptr;
  double flops = 0;
  float alpha = 1.0f, beta = 0.0f;

  void check(cublasStatus_t s, const char* what) const {
    if (s != CUBLAS_STATUS_SUCCESS)
      fail("cuBLASLt: {} failed with status {}", what, static_cast<int>(s));
  }
};

LtGemm::LtGemm(GemmPrecision precision, int m, int n, int k, cudaStream_t stream)
    : impl_(std::make_unique<Impl>()) {
  Impl& g = *impl_;
  g.stream = stream;
  g.flops = 2.0 * m * n * static_cast<double>(k);
  for (const char* name : {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"})
    if ((g.library = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!g.library) fail("cuBLASLt: cannot load libcublasLt.so.13: {}", dlerror());
  auto symbol = [&](const char* name) {
    void* p = dlsym(g.library, name);
    if (!p) fail("cuBLASLt: libcublasLt.so.13 has no symbol {}", name);
    return p;
  };
  LtApi& a = g.api;
  a.create = reinterpret_cast<decltype(a.create)>(symbol("cublasLtCreate"));
  a.destroy = reinterpret_cast<decltype(a.destroy)>(symbol("cublasLtDestroy"));
  a.desc_create = reinterpret_cast<decltype(a.desc_create)>(symbol("cublasLtMatmulDescCreate"));
  a.desc_destroy = reinterpret_cast<decltype(a.desc_destroy)>(symbol("cublasLtMatmulDescDestroy"));
  a.desc_set = reinterpret_cast<decltype(a.desc_set)>(symbol("cublasLtMatmulDescSetAttribute"));
  a.layout_create =
      reinterpret_cast<decltype(a.layout_create)>(symbol("cublasLtMatrixLayoutCreate"));
  a.layout_destroy =
      reinterpret_cast<decltype(a.layout_destroy)>(symbol("cublasLtMatrixLayoutDestroy"));
  a.pref_create =
      reinterpret_cast<decltype(a.pref_create)>(symbol("cublasLtMatmulPreferenceCreate"));
  a.pref_destroy =
      reinterpret_cast<decltype(a.pref_destroy)>(symbol("cublasLtMatmulPreferenceDestroy"));
  a.pref_set =
      reinterpret_cast<decltype(a.pref_set)>(symbol("cublasLtMatmulPreferenceSetAttribute"));
  a.heuristic = reinterpret_cast<decltype(a.heuristic)>(symbol("cublasLtMatmulAlgoGetHeuristic"));
  a.matmul = reinterpret_cast<decltype(a.matmul)>(symbol("cublasLtMatmul"));

  const bool fp8 = precision == GemmPrecision::kFp8;
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const std::size_t in_bytes = fp8 ? 1 : 2;
  check_cuda(cudaMalloc(&g.a, in_bytes * k * m), "allocation");
  check_cuda(cudaMalloc(&g.b, in_bytes * k * n), "allocation");
  check_cuda(cudaMalloc(&g.d, 2 * static_cast<std::size_t>(m) * n), "allocation");
  check_cuda(cudaMalloc(&g.workspace, kWorkspaceBytes), "allocation");
  check_cuda(cudaMemset(g.a, kOperandPattern, in_bytes * k * m), "memset");
  check_cuda(cudaMemset(g.b, kOperandPattern, in_bytes * k * n), "memset");

  g.check(a.create(&g.handle), "cublasLtCreate");
  g.check(a.desc_create(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor");
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  g.check(a.desc_set(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose), "TRANSA");
  g.check(a.desc_set(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), "TRANSB");
  // Column-major: A is k x m (used transposed), B is k x n, D is m x n.
  g.check(a.layout_create(&g.a_layout, in_type, k, m, k), "A layout");
  g.check(a.layout_create(&g.b_layout, in_type, k, n, k), "B layout");
  g.check(a.layout_create(&g.d_layout, CUDA_R_16BF, m, n, m), "D layout");
  cublasLtMatmulPreference_t pref = nullptr;
  g.check(a.pref_create(&pref), "preference");
  const std::uint64_t workspace = kWorkspaceBytes;
  g.check(a.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
          "workspace preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = a.heuristic(g.handle, g.desc, g.a_layout, g.b_layout, g.d_layout,
                                       g.d_layout, pref, 1, &result, &found);
  a.pref_destroy(pref);
  g.check(s, "algorithm heuristic");
  if (found == 0) fail("cuBLASLt: no algorithm for this {} GEMM", fp8 ? "FP8" : "BF16");
  g.algo = result.algo;
}

LtGemm::~LtGemm() {
  Impl& g = *impl_;
  if (g.d_layout) g.api.layout_destroy(g.d_layout);
  if (g.b_layout) g.api.layout_destroy(g.b_layout);
  if (g.a_layout) g.api.layout_destroy(g.a_layout);
  if (g.desc) g.api.desc_destroy(g.desc);
  if (g.handle) g.api.destroy(g.handle);
  for (void* p : {g.a, g.b, g.d, g.workspace}) cudaFree(p);
}

int LtGemm::run(std::string& why) {
  Impl& g = *impl_;
  const cublasStatus_t s =
      g.api.matmul(g.handle, g.desc, &g.alpha, g.a, g.a_layout, g.b, g.b_layout, &g.beta, g.d,
                   g.d_layout, g.d, g.d_layout, &g.algo, g.workspace, kWorkspaceBytes, g.stream);
  if (s == CUBLAS_STATUS_SUCCESS) return 0;
  why = "cublasLtMatmul status " + std::to_string(static_cast<int>(s));
  return static_cast<int>(s);
}

double LtGemm::flops() const {
  return impl_->flops;
}

}  // namespace kh
