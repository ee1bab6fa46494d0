// What the libkhk tests share: the entry looked up in the shared library with dlopen (as a serving
// engine would), a CUDA error check, a workload of tests/data/extra_shapes, the strict check of a
// call's outputs against the reference, one capture of a call replayed on new inputs, and the
// fixture of an entry that asks for a workspace.
#pragma once

#include <dlfcn.h>

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "kh/abi.h"
#include "kh/check/checker.h"
#include "kh/gen/input_generator.h"
#include "kh/run/device_reference.h"
#include "kh/run/call_buffers.h"
#include "kh/run/call_inputs.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh::test {

inline void check_cuda(cudaError_t e, const char* what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

/// libkhk's symbol, or null (with a test failure) when the library or the symbol is missing.
inline void* libkhk_symbol(const std::string& symbol) {
  void* library = dlopen(KHK_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!library) ADD_FAILURE() << "dlopen " << KHK_LIBRARY << ": " << dlerror();
  return library ? dlsym(library, symbol.c_str()) : nullptr;
}

/// The workload of tests/data/extra_shapes/<definition>.jsonl whose axes have all these values.
inline Workload extra_shape_workload(
    const Definition& def, std::initializer_list<std::pair<std::string, std::int64_t>> values) {
  for (auto& record :
       load_workload_file(source_dir() / "tests/data/extra_shapes" / (def.name + ".jsonl"))) {
    const auto axes = resolve_axes(def, record.workload, "extra_shapes");
    bool all = true;
    for (const auto& [axis, value] : values) all = all && axes.at(axis) == value;
    if (all) return record.workload;
  }
  std::string wanted;
  for (const auto& [axis, value] : values) wanted += " " + axis + " " + std::to_string(value);
  ADD_FAILURE() << "no workload with" << wanted << " in tests/data/extra_shapes";
  return {};
}

/// The workload of tests/data/extra_shapes/<definition>.jsonl whose `axis` is `value`.
inline Workload extra_shape_workload(const Definition& def, const std::string& axis,
                                     std::int64_t value) {
  return extra_shape_workload(def, {{axis, value}});
}

inline void expect_matches(const Definition& def, const DrawnCallInputs& drawn,
                           const OutputSet& expected, const CallBuffers& buffers,
                           const std::string& what) {
  const CheckResult r = check_outputs(def, drawn.host, expected, buffers.download_outputs(),
                                      official_options(def, false));
  EXPECT_TRUE(r.passed()) << what << ": " << r.message;
}

/// Captures one call of `entry` on `buffers` into a CUDA graph (global mode: any synchronising or
/// allocating call made during the capture invalidates it), then replays it three times, each on
/// the inputs draw(k) (k = 1, 2, 3) written to the same addresses, and checks every replay against
/// the GPU reference for its own inputs. With `changed_input`, each draw must also have changed
/// that input from the captured call's, or the replay would prove nothing.
inline void expect_graph_replays_match(kh_entry_fn entry, MemoryBackend& gpu,
                                       const Definition& def, const AxisValues& axes,
                                       CallBuffers& buffers, cudaStream_t stream, void* workspace,
                                       std::uint64_t bytes,
                                       const std::function<DrawnCallInputs(std::int64_t)>& draw,
                                       const std::string& changed_input = "") {
  const std::vector<DLTensor>& t = buffers.tensors();
  const HostTensor captured =
      changed_input.empty() ? HostTensor{} : buffers.download_input(changed_input);
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  const int status = entry(t.data(), static_cast<int32_t>(t.size()), stream, workspace, bytes);
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
  ASSERT_EQ(status, KH_OK);
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (std::int64_t k = 1; k <= 3; ++k) {
    const DrawnCallInputs drawn = draw(k);
    buffers.reupload_inputs(drawn.host, drawn.draws);
    if (!changed_input.empty()) {
      EXPECT_FALSE(buffers.download_input(changed_input).bytes_equal(captured))
          << "replay " << k << " should see another " << changed_input << " than the capture";
    }
    const OutputSet expected = run_device_reference(gpu, def, axes, buffers);
    buffers.poison_outputs();
    check_cuda(cudaGraphLaunch(exec, stream), "replay");
    check_cuda(cudaStreamSynchronize(stream), "replay");
    expect_matches(def, drawn, expected, buffers, "replay " + std::to_string(k));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

/// A libkhk entry that asks for a workspace (`<entry>_workspace_bytes`), on one workload of its
/// definition: a test class derives from it beside ::testing::TestWithParam, calls open() (under
/// ASSERT_NO_FATAL_FAILURE) after KH_REQUIRE_GPU() in SetUp, sets workload_, and calls close() in
/// TearDown.
class LibkhkWorkspaceEntry {
 protected:
  using WorkspaceFn = std::uint64_t (*)(const DLTensor*, std::int32_t);

  void open(const std::string& definition) {
    const std::string entry = "khk_" + definition;
    entry_ = reinterpret_cast<kh_entry_fn>(libkhk_symbol(entry));
    workspace_bytes_ = reinterpret_cast<WorkspaceFn>(libkhk_symbol(entry + "_workspace_bytes"));
    ASSERT_NE(entry_, nullptr) << "libkhk exports no " << entry;
    ASSERT_NE(workspace_bytes_, nullptr) << "libkhk exports no " << entry << "_workspace_bytes";
    gpu_ = make_cuda_backend(0);
    dataset_ = std::make_unique<Dataset>(Dataset::open(source_dir()));
    def_ = &dataset_->definition(definition);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  }
  void close() {
    if (workspace_) cudaFree(workspace_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::unique_ptr<InputGenerator> generator(std::uint64_t seed) const {
    GeneratorOptions options;
    options.seed = seed;
    return std::make_unique<InputGenerator>(*def_, workload_, source_dir(), options);
  }

  /// The call on the default seed's inputs, with the workspace it asks for (its size in
  /// asked_bytes_), captured once and replayed on the inputs of the next three seeds.
  void expect_graph_replays_match_with_workspace(const std::string& changed_input) {
    const auto first_gen = generator(kDefaultSeed);
    const DrawnCallInputs first = generate_drawn_call_inputs(*first_gen, 0);
    CallBuffers buffers(*gpu_, *def_, first_gen->axes(), first.host, 0, first.draws);
    const std::vector<DLTensor>& t = buffers.tensors();
    asked_bytes_ = workspace_bytes_(t.data(), static_cast<std::int32_t>(t.size()));
    if (asked_bytes_) check_cuda(cudaMalloc(&workspace_, asked_bytes_), "workspace");
    expect_graph_replays_match(
        entry_, *gpu_, *def_, first_gen->axes(), buffers, stream_, workspace_, asked_bytes_,
        [&](std::int64_t k) {
          return generate_drawn_call_inputs(*generator(kDefaultSeed + k), k);
        },
        changed_input);
  }

  /// The call on the default seed's inputs without a workspace: the entry must take a route that
  /// needs none and stay right.
  void expect_right_without_workspace() {
    const auto gen = generator(kDefaultSeed);
    const DrawnCallInputs drawn = generate_drawn_call_inputs(*gen, 0);
    CallBuffers buffers(*gpu_, *def_, gen->axes(), drawn.host, 0, drawn.draws);
    const OutputSet expected = run_device_reference(*gpu_, *def_, gen->axes(), buffers);
    buffers.poison_outputs();
    const std::vector<DLTensor>& t = buffers.tensors();
    ASSERT_EQ(entry_(t.data(), static_cast<int32_t>(t.size()), stream_, nullptr, 0), KH_OK);
    check_cuda(cudaStreamSynchronize(stream_), "call");
    expect_matches(*def_, drawn, expected, buffers, "no workspace");
  }

  kh_entry_fn entry_ = nullptr;
  WorkspaceFn workspace_bytes_ = nullptr;
  std::unique_ptr<MemoryBackend> gpu_;
  std::unique_ptr<Dataset> dataset_;
  const Definition* def_ = nullptr;
  Workload workload_;
  void* workspace_ = nullptr;
  std::uint64_t asked_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace kh::test
