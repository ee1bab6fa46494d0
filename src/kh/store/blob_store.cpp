#include "kh/store/blob_store.h"

#include <atomic>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"

namespace kh {

namespace fs = std::filesystem;

bool is_blob_hash(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

BlobStore::BlobStore(fs::path dir) : dir_(std::move(dir)) {
  fs::create_directories(dir_);
}

fs::path BlobStore::path_of(const std::string& hash) const {
  if (!is_blob_hash(hash))
    fail("{}: blob hash \"{}\" is not 64 lowercase hex digits", dir_.string(), hash);
  return dir_ / hash.substr(0, 2) / hash.substr(2);
}

std::string BlobStore::put(std::string_view bytes) {
  const std::string hash = sha256_hex(bytes);
  const fs::path path = path_of(hash);
  if (fs::exists(path)) return hash;
  fs::create_directories(path.parent_path());
  // A name of our own (pid + counter), so concurrent writers of the same blob never share a
  // temporary file; the rename is atomic and the contents identical, so the last one wins safely.
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = path.parent_path() / (".tmp-" + std::to_string(::getpid()) + "-" +
                                             std::to_string(counter++) + "-" + hash.substr(2));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("{}: cannot open for writing", tmp.string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      fail("{}: write error", tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail("{}: cannot move blob into place: {}", path.string(), ec.message());
  }
  return hash;
}

std::string BlobStore::get(const std::string& hash) const {
  const fs::path path = path_of(hash);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: blob {} is not in the store", path.string(), hash);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("{}: read error", path.string());
  return ss.str();
}

bool BlobStore::has(const std::string& hash) const {
  return fs::exists(path_of(hash));
}

}  // namespace kh
