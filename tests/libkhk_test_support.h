// What the libkhk tests share: the entry looked up in the shared library with dlopen (as a serving
// engine would), a CUDA error check, a workload of tests/data/extra_shapes, and the strict check
// of a call's outputs against the reference.
#pragma once

#include <dlfcn.h>

#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "kh/abi.h"
#include "kh/check/checker.h"
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

}  // namespace kh::test
