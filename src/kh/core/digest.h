// A 64-bit digest of a byte range that host and device compute alike and in any order: the sum
// of a mixed hash of every 8-byte word and its position, so a parallel reduction gives the same
// value as a loop. Used to see whether a candidate wrote into an input that lives only in device
// memory (no host copy to compare with).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kh/core/host_device.h"

namespace kh {

/// SplitMix64's finaliser: every input bit affects every output bit.
KH_HD std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The digest term of word `index` (bytes [8*index, 8*index + 8), zero-padded past the end).
KH_HD std::uint64_t digest_term(std::uint64_t word, std::uint64_t index) {
  return mix64(word ^ mix64(index + 0x9e3779b97f4a7c15ull));
}

/// Little-endian word `index` of a byte range, zero-padded past `bytes`.
KH_HD std::uint64_t digest_word(const unsigned char* p, std::size_t bytes, std::size_t index) {
  std::uint64_t w = 0;
  for (std::size_t b = 0; b < 8 && 8 * index + b < bytes; ++b)
    w |= static_cast<std::uint64_t>(p[8 * index + b]) << (8 * b);
  return w;
}

}  // namespace kh
