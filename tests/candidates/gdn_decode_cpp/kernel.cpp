// Host (cpu backend) implementation of gdn_decode_qk4_v8_d128_k_last with planted faults. With
// FAULT=none it is a correct, straightforward implementation; every other value plants one bug the
// harness must catch (see candidate.toml and the comments at each fault below). Tensors are host
// memory; bf16 travels as uint16 bits.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kh/abi.h"

#ifndef FAULT
#define FAULT none
#endif
#define KH_STRINGIFY2(x) #x
#define KH_STRINGIFY(x) KH_STRINGIFY2(x)

namespace {

// The fault is chosen at compile time (-DFAULT=name); a misspelt name fails the build instead of
// silently building the correct kernel.
constexpr std::string_view kFault = KH_STRINGIFY(FAULT);
constexpr std::string_view kFaults[] = {"none",
                                        "segfault",
                                        "hang",
                                        "skip_element",
                                        "write_past_end",
                                        "write_input",
                                        "cache_by_address",
                                        "nondeterministic",
                                        "flaky_once",
                                        "slow"};
constexpr bool known_fault() {
  for (std::string_view f : kFaults)
    if (f == kFault) return true;
  return false;
}
static_assert(known_fault(), "FAULT must be one of the values listed in candidate.toml");

constexpr int kQKHeads = 4;
constexpr int kVHeads = 8;
constexpr int kHeadSize = 128;
constexpr int kStateElements = kHeadSize * kHeadSize;

float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even, as torch's .to(torch.bfloat16) does; NaN stays a (quiet) NaN.
std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

bool has_dtype(const DLTensor& t, std::uint8_t code, std::uint8_t bits) {
  return t.dtype.code == code && t.dtype.bits == bits && t.dtype.lanes == 1;
}

// Compact row-major tensor of exactly this shape and dtype.
bool is_tensor(const DLTensor& t, std::uint8_t code, std::uint8_t bits,
               std::initializer_list<std::int64_t> shape) {
  if (!has_dtype(t, code, bits) || t.ndim != static_cast<std::int32_t>(shape.size())) return false;
  std::int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != shape.begin()[i]) return false;
    if (t.strides && t.shape[i] != 1 && t.strides[i] != stride) return false;
    stride *= t.shape[i];
  }
  return true;
}

template <typename T>
T* data_of(const DLTensor& t) {
  return t.data ? reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset) : nullptr;
}

std::int64_t numel(const DLTensor& t) {
  std::int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

// One token of the delta rule for value head (bi, h), exactly the reference's order of updates:
// decay, prediction u = M k, delta = beta (v - u), rank-1 update, output from the UPDATED state.
void decode_head(const DLTensor* t, std::int64_t bi, int h, float scale) {
  const auto* q = data_of<const std::uint16_t>(t[0]);
  const auto* k = data_of<const std::uint16_t>(t[1]);
  const auto* v = data_of<const std::uint16_t>(t[2]);
  const auto* state = data_of<const float>(t[3]);  // null: absent, start from zeros
  const auto* A_log = data_of<const float>(t[4]);
  const auto* a = data_of<const std::uint16_t>(t[5]);
  const auto* dt_bias = data_of<const float>(t[6]);
  const auto* b = data_of<const std::uint16_t>(t[7]);
  auto* output = data_of<std::uint16_t>(t[9]);
  auto* new_state = data_of<float>(t[10]);

  const std::int64_t head = bi * kVHeads + h;
  const std::int64_t qk_row = (bi * kQKHeads + h / (kVHeads / kQKHeads)) * kHeadSize;  // GVA
  const float x = bf16_to_float(a[head]) + dt_bias[h];
  const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));  // torch: linear above 20
  const double g = std::exp(-std::exp(A_log[h]) * softplus);
  const double beta = 1.0 / (1.0 + std::exp(-static_cast<double>(bf16_to_float(b[head]))));

  double kk[kHeadSize], qq[kHeadSize], row[kHeadSize];
  for (int i = 0; i < kHeadSize; ++i) {
    kk[i] = bf16_to_float(k[qk_row + i]);
    qq[i] = bf16_to_float(q[qk_row + i]);
  }
  for (int vi = 0; vi < kHeadSize; ++vi) {
    // Row vi of the k-last state is M[vi][:] = S[:][vi]; it only needs its own u[vi].
    const std::int64_t first = head * kStateElements + vi * kHeadSize;
    double u = 0;
    for (int i = 0; i < kHeadSize; ++i) {
      row[i] = g * (state ? state[first + i] : 0.0);
      u += row[i] * kk[i];
    }
    const double delta = beta * (bf16_to_float(v[head * kHeadSize + vi]) - u);
    double o = 0;
    for (int i = 0; i < kHeadSize; ++i) {
      row[i] += delta * kk[i];
      o += row[i] * qq[i];
      new_state[first + i] = static_cast<float>(row[i]);
    }
    output[head * kHeadSize + vi] = float_to_bf16(static_cast<float>(scale * o));
  }
}

// cache_by_address: the outputs of the last call made with each q address. A real kernel that
// memoises on pointers returns stale results when the caller reuses buffers with new contents.
struct CachedOutputs {
  std::vector<std::uint16_t> output;
  std::vector<float> new_state;
};
std::map<const void*, CachedOutputs>& address_cache() {
  static std::map<const void*, CachedOutputs> cache;
  return cache;
}

// Read through a volatile pointer so the compiler cannot prove it null and turn the store into a
// trap instruction: the fault must be a genuine SIGSEGV.
int* volatile g_null_pointer = nullptr;

}  // namespace

KH_EXPORT int kh_gdn_decode_cpp(const DLTensor* t, int32_t num_tensors, void* /*stream*/,
                                void* /*workspace*/, uint64_t /*workspace_bytes*/) {
  if (num_tensors != 11) return KH_ERROR_INVALID_ARGUMENT;
  if (t[0].ndim != 4) return KH_ERROR_INVALID_ARGUMENT;
  const std::int64_t batch = t[0].shape[0];
  const bool ok =
      is_tensor(t[0], kDLBfloat, 16, {batch, 1, kQKHeads, kHeadSize}) &&
      is_tensor(t[1], kDLBfloat, 16, {batch, 1, kQKHeads, kHeadSize}) &&
      is_tensor(t[2], kDLBfloat, 16, {batch, 1, kVHeads, kHeadSize}) &&
      (!t[3].data || is_tensor(t[3], kDLFloat, 32, {batch, kVHeads, kHeadSize, kHeadSize})) &&
      is_tensor(t[4], kDLFloat, 32, {kVHeads}) &&
      is_tensor(t[5], kDLBfloat, 16, {batch, 1, kVHeads}) &&
      is_tensor(t[6], kDLFloat, 32, {kVHeads}) &&
      is_tensor(t[7], kDLBfloat, 16, {batch, 1, kVHeads}) &&
      (!t[8].data || is_tensor(t[8], kDLFloat, 32, {})) &&
      is_tensor(t[9], kDLBfloat, 16, {batch, 1, kVHeads, kHeadSize}) &&
      is_tensor(t[10], kDLFloat, 32, {batch, kVHeads, kHeadSize, kHeadSize});
  if (!ok) return KH_ERROR_INVALID_ARGUMENT;
  const float given_scale = t[8].data ? *data_of<const float>(t[8]) : 0.0f;
  const float scale = given_scale == 0.0f ? 1.0f / std::sqrt(float(kHeadSize)) : given_scale;
  auto* output = data_of<std::uint16_t>(t[9]);
  auto* new_state = data_of<float>(t[10]);
  const std::int64_t output_elements = numel(t[9]), state_elements = numel(t[10]);

  if constexpr (kFault == "segfault") *g_null_pointer = 1;
  if constexpr (kFault == "flaky_once") {
    // Crashes the first time it runs in a folder: the marker file makes every later call (and
    // a retry in a fresh worker) pass. The folder comes from the environment the worker inherits.
    const char* dir = std::getenv("KH_TEST_FLAKY_DIR");
    if (dir) {
      const std::string marker = std::string(dir) + "/flaky_once.marker";
      if (std::FILE* f = std::fopen(marker.c_str(), "r")) {
        std::fclose(f);
      } else if (std::FILE* created = std::fopen(marker.c_str(), "w")) {
        std::fclose(created);
        *g_null_pointer = 1;
      }
    }
  }
  if constexpr (kFault == "hang") {
    volatile bool spinning = true;  // volatile: the loop is not optimised away
    while (spinning) {
    }
  }
  if constexpr (kFault == "cache_by_address") {
    auto hit = address_cache().find(t[0].data);
    if (hit != address_cache().end() &&
        hit->second.output.size() == static_cast<std::size_t>(output_elements)) {
      std::memcpy(output, hit->second.output.data(), output_elements * sizeof(std::uint16_t));
      std::memcpy(new_state, hit->second.new_state.data(), state_elements * sizeof(float));
      return KH_OK;
    }
  }

  for (std::int64_t bi = 0; bi < batch; ++bi)
    for (int h = 0; h < kVHeads; ++h) {
      // skip_element: output[0]'s last element (batch 0, head 7, v 127) is never written.
      if constexpr (kFault == "skip_element") {
        if (bi == 0 && h == kVHeads - 1) {
          const std::uint16_t kept = output[kVHeads * kHeadSize - 1];
          decode_head(t, bi, h, scale);
          output[kVHeads * kHeadSize - 1] = kept;  // restore whatever the harness put there
          continue;
        }
      }
      decode_head(t, bi, h, scale);
      // slow: every head is computed twice (same result): a correct candidate at half the speed.
      if constexpr (kFault == "slow") decode_head(t, bi, h, scale);
    }

  if constexpr (kFault == "write_past_end") {
    // One float past the end of new_state, with a value no canary pattern is likely to hold.
    const std::uint32_t bits = 0x3f800001u;
    std::memcpy(new_state + state_elements, &bits, sizeof bits);
  }
  if constexpr (kFault == "write_input") {
    // Flip the lowest mantissa bit of v[0] after it was used: outputs stay right, input changes.
    data_of<std::uint16_t>(t[2])[0] ^= 1u;
  }
  if constexpr (kFault == "cache_by_address") {
    CachedOutputs& entry = address_cache()[t[0].data];
    entry.output.assign(output, output + output_elements);
    entry.new_state.assign(new_state, new_state + state_elements);
  }
  if constexpr (kFault == "nondeterministic") {
    // Every second call (the 2nd, 4th, ...) flips the lowest mantissa bit of new_state[0]: far
    // inside the tolerance, but two calls on the same inputs are no longer bit-identical.
    static std::uint64_t calls = 0;
    if (calls++ % 2 == 1 && state_elements > 0) {
      std::uint32_t bits;
      std::memcpy(&bits, new_state, sizeof bits);
      bits ^= 1u;
      std::memcpy(new_state, &bits, sizeof bits);
    }
  }
  return KH_OK;
}
