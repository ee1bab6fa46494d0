// The safetensors file format: an 8-byte little-endian header length, a JSON header naming each
// tensor's dtype, shape and [begin, end) byte range, then the raw bytes. The reader validates the
// header completely before reading data (length inside the file, known dtypes, sizes that match
// shapes, ranges inside the data and not overlapping) and loads tensors one at a time, so an
// input of a large blob costs only that input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kh/core/host_tensor.h"

namespace kh {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin;  // relative to the start of the data section
  std::uint64_t end;
};

class SafetensorsReader {
 public:
  explicit SafetensorsReader(std::filesystem::path path);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry* find(const std::string& name) const;

  /// Reads one tensor; an unknown name is an error naming the file and the names it has.
  HostTensor load(const std::string& name);

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  std::uint64_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

using NamedTensors = std::vector<std::pair<std::string, const HostTensor*>>;

/// Writes the tensors (in the given order) and string metadata atomically.
void write_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace kh
