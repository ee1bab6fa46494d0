// libkhk's GDN decode used the way a serving engine uses it (label `gpu`; skipped without a
// device): the entry is looked up in the shared library with dlopen and called on kh's device
// buffers, on a stream of this process's CUDA runtime, and judged by kh's GPU reference:
//   - GDN decode updating the state in place (state and new_state the same buffer);
//   - GDN decode captured once into a CUDA graph, then replayed on new inputs written to the same
//     addresses: every replay must match the reference for its own inputs.
#include <gtest/gtest.h>

#include "libkhk_test_support.h"

namespace kh {
namespace {

constexpr const char* kDecode = "gdn_decode_qk4_v8_d128_k_last";
constexpr int kState = 3, kNewState = 10;  // positions in the decode's tensor list
// Batch sizes from tests/data/extra_shapes: 5 (not a power of two, not an official size: small
// tiles, one CTA per tile) and 256 (the largest tiles, CTAs striding over more tiles than the grid
// has CTAs).
constexpr std::int64_t kBatches[] = {5, 256};

class LibkhkDecode : public ::testing::TestWithParam<std::int64_t> {
 protected:
  void SetUp() override {
    KH_REQUIRE_GPU();
    entry_ = reinterpret_cast<kh_entry_fn>(test::libkhk_symbol(std::string("khk_") + kDecode));
    ASSERT_NE(entry_, nullptr) << "libkhk exports no khk_" << kDecode;
    gpu_ = make_cuda_backend(0);
    dataset_ = std::make_unique<Dataset>(Dataset::open(test::source_dir()));
    def_ = &dataset_->definition(kDecode);
    gen_ = std::make_unique<InputGenerator>(
        *def_, test::extra_shape_workload(*def_, "batch_size", GetParam()), test::source_dir());
    test::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  kh_entry_fn entry_ = nullptr;
  std::unique_ptr<MemoryBackend> gpu_;
  std::unique_ptr<Dataset> dataset_;
  const Definition* def_ = nullptr;
  std::unique_ptr<InputGenerator> gen_;
  cudaStream_t stream_ = nullptr;
};

TEST_P(LibkhkDecode, UpdatesTheStateInPlace) {
  const DrawnCallInputs drawn = generate_drawn_call_inputs(*gen_, 0);
  CallBuffers buffers(*gpu_, *def_, gen_->axes(), drawn.host, 0, drawn.draws);
  const OutputSet expected = run_device_reference(*gpu_, *def_, gen_->axes(), buffers);
  std::vector<DLTensor> t = buffers.tensors();
  const std::size_t state_bytes = static_cast<std::size_t>(GetParam()) * 8 * 128 * 128 * 4;
  test::check_cuda(cudaMemcpy(t[kNewState].data, t[kState].data, state_bytes, cudaMemcpyDeviceToDevice),
             "copy the state into new_state");
  t[kState].data = t[kNewState].data;
  ASSERT_EQ(entry_(t.data(), static_cast<int32_t>(t.size()), stream_, nullptr, 0), KH_OK);
  test::check_cuda(cudaStreamSynchronize(stream_), "decode");
  test::expect_matches(*def_, drawn, expected, buffers, "in place");
}

TEST_P(LibkhkDecode, GraphCapturedOnceIsRightForNewInputs) {
  const DrawnCallInputs first = generate_drawn_call_inputs(*gen_, 0);
  CallBuffers buffers(*gpu_, *def_, gen_->axes(), first.host, 0, first.draws);
  test::expect_graph_replays_match(entry_, *gpu_, *def_, gen_->axes(), buffers, stream_, nullptr,
                                   0, [&](std::int64_t trial) {
                                     return generate_drawn_call_inputs(*gen_, trial);
                                   });
}

INSTANTIATE_TEST_SUITE_P(Batches, LibkhkDecode, ::testing::ValuesIn(kBatches),
                         [](const auto& info) { return "batch_" + std::to_string(info.param); });

}  // namespace
}  // namespace kh
