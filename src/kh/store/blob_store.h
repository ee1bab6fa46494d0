// Content-addressed blobs in a folder: the bytes whose sha256 is "abcdef..." live in
// <dir>/ab/cdef.... Written through a temporary file and a rename, so a reader never sees half a
// blob and two processes putting the same bytes at once both succeed; the same bytes are stored
// once.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kh {

class BlobStore {
 public:
  explicit BlobStore(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }

  /// Stores the bytes (if not there yet) and returns their hash.
  std::string put(std::string_view bytes);
  std::string get(const std::string& hash) const;  // throws, naming the path, if absent
  bool has(const std::string& hash) const;

  /// Where the blob lives; throws unless `hash` is 64 lowercase hex digits.
  std::filesystem::path path_of(const std::string& hash) const;

 private:
  std::filesystem::path dir_;
};

/// Whether `text` is a blob hash: 64 lowercase hex digits.
bool is_blob_hash(std::string_view text);

}  // namespace kh
