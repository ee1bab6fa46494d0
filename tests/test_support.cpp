#include "test_support.h"

#include <atomic>
#include <fstream>
#include <random>

#include <unistd.h>

#include "kh/core/error.h"
#include "kh/spec/dataset.h"

namespace kh::test {

std::filesystem::path source_dir() {
  return KH_SOURCE_DIR;
}
std::filesystem::path shared_dir() {
  return KH_SHARED_DIR;
}

Definition shipped_definition(const std::string& name) {
  for (const auto& file : find_files(source_dir() / "definitions", ".json"))
    if (file.stem() == name) return load_definition(file);
  fail("no shipped definition named {}", name);
}

ScopedTempDir::ScopedTempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("kh-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace kh::test
