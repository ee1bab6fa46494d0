// libkhk's GDN prefill used the way a serving engine uses it (label `gpu`; skipped without a
// device), on the shapes its context-parallel route takes: the entry and its workspace query are
// looked up with dlopen and called on kh's device buffers, on a stream of this process's CUDA
// runtime, and judged by kh's GPU reference:
//   - captured once into a CUDA graph (with the workspace it asked for: the groups' maps, partials
//     and ready counters), then replayed on inputs of other generator seeds written to the same
//     addresses: every replay must match the reference for its own inputs. The route's scan runs
//     in thread-block clusters and its correction is a programmatic dependent launch that waits
//     on counters the map pass zeroes, so a replay that skipped the zeroing or lost the launch
//     order would read another call's entry states;
//   - called without a workspace: it must take a route that needs none and stay right.
#include <gtest/gtest.h>

#include "kh/gen/input_generator.h"
#include "kh/run/device_reference.h"
#include "libkhk_test_support.h"

namespace kh {
namespace {

constexpr const char* kPrefill = "gdn_prefill_qk4_v8_d128_k_last";
// Shapes from tests/data/extra_shapes: one sequence of 20000 tokens (8 groups) and two that
// share 16000 (4 groups).
struct Shape {
  std::int64_t tokens, sequences;
};
constexpr Shape kShapes[] = {{20000, 1}, {16000, 2}};

using WorkspaceFn = std::uint64_t (*)(const DLTensor*, std::int32_t);

class LibkhkPrefill : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    KH_REQUIRE_GPU();
    const std::string entry = std::string("khk_") + kPrefill;
    entry_ = reinterpret_cast<kh_entry_fn>(test::libkhk_symbol(entry));
    workspace_bytes_ =
        reinterpret_cast<WorkspaceFn>(test::libkhk_symbol(entry + "_workspace_bytes"));
    ASSERT_NE(entry_, nullptr) << "libkhk exports no " << entry;
    ASSERT_NE(workspace_bytes_, nullptr) << "libkhk exports no " << entry << "_workspace_bytes";
    gpu_ = make_cuda_backend(0);
    dataset_ = std::make_unique<Dataset>(Dataset::open(test::source_dir()));
    def_ = &dataset_->definition(kPrefill);
    workload_ = test::extra_shape_workload(
        *def_, {{"total_seq_len", GetParam().tokens}, {"num_seqs", GetParam().sequences}});
    test::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  }
  void TearDown() override {
    if (workspace_) cudaFree(workspace_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::unique_ptr<InputGenerator> generator(std::uint64_t seed) const {
    GeneratorOptions options;
    options.seed = seed;
    return std::make_unique<InputGenerator>(*def_, workload_, test::source_dir(), options);
  }

  kh_entry_fn entry_ = nullptr;
  WorkspaceFn workspace_bytes_ = nullptr;
  std::unique_ptr<MemoryBackend> gpu_;
  std::unique_ptr<Dataset> dataset_;
  const Definition* def_ = nullptr;
  Workload workload_;
  void* workspace_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

TEST_P(LibkhkPrefill, GraphCapturedOnceIsRightForNewInputs) {
  const auto first_gen = generator(kDefaultSeed);
  const DrawnCallInputs first = generate_drawn_call_inputs(*first_gen, 0);
  CallBuffers buffers(*gpu_, *def_, first_gen->axes(), first.host, 0, first.draws);
  const std::vector<DLTensor>& t = buffers.tensors();
  const std::uint64_t bytes = workspace_bytes_(t.data(), static_cast<std::int32_t>(t.size()));
  EXPECT_GT(bytes, 0u) << "a few long sequences should take the context-parallel route";
  if (bytes) test::check_cuda(cudaMalloc(&workspace_, bytes), "workspace");
  const HostTensor captured_k = buffers.download_input("k");

  // Global mode: any synchronising or allocating call made during the capture invalidates it.
  test::check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), "begin capture");
  const int status = entry_(t.data(), static_cast<int32_t>(t.size()), stream_, workspace_, bytes);
  cudaGraph_t graph = nullptr;
  test::check_cuda(cudaStreamEndCapture(stream_, &graph), "end capture");
  ASSERT_EQ(status, KH_OK);
  cudaGraphExec_t exec = nullptr;
  test::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (std::uint64_t k = 1; k <= 3; ++k) {
    const auto gen = generator(kDefaultSeed + k);
    const DrawnCallInputs drawn = generate_drawn_call_inputs(*gen, static_cast<std::int64_t>(k));
    buffers.reupload_inputs(drawn.host, drawn.draws);
    EXPECT_FALSE(buffers.download_input("k").bytes_equal(captured_k))
        << "seed " << kDefaultSeed + k << " should draw other keys than the captured call";
    const OutputSet expected = run_device_reference(*gpu_, *def_, gen->axes(), buffers);
    buffers.poison_outputs();
    test::check_cuda(cudaGraphLaunch(exec, stream_), "replay");
    test::check_cuda(cudaStreamSynchronize(stream_), "replay");
    test::expect_matches(*def_, drawn, expected, buffers, "replay " + std::to_string(k));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_P(LibkhkPrefill, WithoutWorkspaceIsRight) {
  const auto gen = generator(kDefaultSeed);
  const DrawnCallInputs drawn = generate_drawn_call_inputs(*gen, 0);
  CallBuffers buffers(*gpu_, *def_, gen->axes(), drawn.host, 0, drawn.draws);
  const OutputSet expected = run_device_reference(*gpu_, *def_, gen->axes(), buffers);
  buffers.poison_outputs();
  const std::vector<DLTensor>& t = buffers.tensors();
  ASSERT_EQ(entry_(t.data(), static_cast<int32_t>(t.size()), stream_, nullptr, 0), KH_OK);
  test::check_cuda(cudaStreamSynchronize(stream_), "call");
  test::expect_matches(*def_, drawn, expected, buffers, "no workspace");
}

INSTANTIATE_TEST_SUITE_P(Shapes, LibkhkPrefill, ::testing::ValuesIn(kShapes),
                         [](const auto& info) {
                           return "tokens_" + std::to_string(info.param.tokens) + "_seqs_" +
                                  std::to_string(info.param.sequences);
                         });

}  // namespace
}  // namespace kh
