// A FlashInfer-Bench solution: build spec (language, entry point "file::symbol", binding,
// destination-passing style) and its source files inline.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kh/core/json_io.h"

namespace kh {

struct SourceFile {
  std::string path;  // relative, no "..", unique within the solution
  std::string content;
};

struct EntryPoint {
  std::string file;
  std::string symbol;
  std::string text() const { return file + "::" + symbol; }
};

/// Parses "file::symbol" (exactly one "::", both parts non-empty); `where` prefixes errors.
EntryPoint parse_entry_point(const std::string& text, const std::string& where);

struct BuildSpec {
  std::string language;  // python, triton, cpp, cuda, tilelang
  std::vector<std::string> target_hardware;
  EntryPoint entry_point;
  std::vector<std::string> dependencies;
  bool destination_passing_style = true;
  std::string binding;  // "tvm-ffi", "torch" or empty (tvm-ffi for cpp/cuda)
};

struct Solution {
  std::string name;
  std::string definition;
  std::string author;
  std::string description;
  BuildSpec spec;
  std::vector<SourceFile> sources;

  static Solution from_json(const JsonCursor& cursor);
  Json to_json() const;
};

Solution load_solution(const std::filesystem::path& path);

}  // namespace kh
