// SHA-256 (FIPS 180-4), streaming. Used for content-addressed build keys, so it must be exact and
// stable across machines; it is not meant to be fast.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kh {

class Sha256 {
 public:
  Sha256();

  Sha256& update(const void* data, std::size_t size);
  Sha256& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }

  /// The 32-byte digest. Finishes the hash: call it once, after the last update.
  std::array<std::uint8_t, 32> digest();
  /// The digest as 64 lowercase hex digits. Finishes the hash, like digest().
  std::string hex_digest();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

/// Hex SHA-256 of one byte string.
std::string sha256_hex(std::string_view bytes);

}  // namespace kh
