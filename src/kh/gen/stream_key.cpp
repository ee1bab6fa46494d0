#include "kh/gen/stream_key.h"

namespace kh {
namespace {

// FNV-1a over the fields with a separator byte, then SplitMix64's finaliser for avalanche.
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

std::uint64_t fnv(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * kFnvPrime;
  return (h ^ 0xffu) * kFnvPrime;  // field separator
}

std::uint64_t fnv_u64(std::uint64_t h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xffu)) * kFnvPrime;
  return h;
}

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

PhiloxKey derive_key(std::uint64_t seed, std::string_view workload_uuid, std::int64_t trial,
                     std::string_view input_name) {
  std::uint64_t h = fnv_u64(kFnvOffset, seed);
  h = fnv(h, workload_uuid);
  h = fnv_u64(h, static_cast<std::uint64_t>(trial));
  h = fnv(h, input_name);
  const std::uint64_t k = splitmix64(h);
  return {static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
}

}  // namespace kh
