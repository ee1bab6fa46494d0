// The host form of Hopper's warpgroup MMA: what it computes and how strictly, in wgmma_on_host.h.
#include "wgmma_on_host.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cta_emulator.h"
#include "kh/core/error.h"
#include "operand_bits.h"

namespace khk_host {
namespace {

using kh::Error;
using kh::test::EmulatedCta;

constexpr int kOperandBytes = 32;  // of K per instruction: k16 bf16, k8 tf32

struct Descriptor {
  uint32_t start, leading, stride;
  int swizzle;  // bytes: 128, 64, 32, or 0 for none
};

Descriptor decode(uint64_t bits) {
  if ((bits >> 49 & 7) != 0)
    throw Error(fmt::format("wgmma: descriptor {:#018x} has a base offset (not emulated)", bits));
  static constexpr int kSwizzle[4] = {0, 128, 64, 32};
  return {static_cast<uint32_t>(bits & 0x3fff) << 4,
          static_cast<uint32_t>(bits >> 16 & 0x3fff) << 4,
          static_cast<uint32_t>(bits >> 32 & 0x3fff) << 4, kSwizzle[bits >> 62]};
}

// Byte offset of element (mn, k) of an operand (mn: A's row or B's column), `bytes` per element,
// `mn_major` when its M or N index is the contiguous one. The canonical layouts, in 16-byte
// chunks: without swizzle, 8 x 16-byte core matrices (K-major: rows 16 bytes apart, 8-row groups
// `stride` apart, 16-byte K chunks `leading` apart; MN-major: K rows 16 bytes apart, 8-row K
// groups `leading` apart, 16-byte MN chunks `stride` apart); with a swizzle of W bytes, lines of W
// bytes (K-major: one per row, 8-row groups `stride` apart; MN-major: one per K index, W bytes of
// M or N in it, 8-line K groups `stride` apart, W-byte MN atoms `leading` apart), the swizzle then
// applied to the final address.
uint32_t element_offset(const Descriptor& d, int mn, int k, int bytes, bool mn_major) {
  const int per_chunk = 16 / bytes;
  uint32_t off;
  if (!mn_major && d.swizzle) {
    off = d.start + (mn / 8) * d.stride + (mn % 8) * d.swizzle + k * bytes;
  } else if (!mn_major) {
    off = d.start + (mn / 8) * d.stride + (mn % 8) * 16 + (k / per_chunk) * d.leading +
          (k % per_chunk) * bytes;
  } else if (d.swizzle) {
    const int atom = d.swizzle / bytes;
    off = d.start + (mn / atom) * d.leading + (mn % atom) * bytes + (k / 8) * d.stride +
          (k % 8) * d.swizzle;
  } else {
    off = d.start + (mn / per_chunk) * d.stride + (mn % per_chunk) * bytes + (k / 8) * d.leading +
          (k % 8) * 16;
  }
  if (d.swizzle) off ^= ((off >> 7) & static_cast<uint32_t>(d.swizzle / 16 - 1)) << 4;
  return off;
}

int element_bytes(int type) {
  if (type == kWgmmaBf16) return 2;
  if (type == kWgmmaTf32) return 4;
  throw Error(fmt::format("wgmma: operand type {} is not emulated (bf16 {}, tf32 {})", type,
                          static_cast<int>(kWgmmaBf16), static_cast<int>(kWgmmaTf32)));
}

// Element (mn, k) of a shared-memory operand, as the tensor cores read it.
float read_operand(const Descriptor& d, int mn, int k, int type, bool mn_major) {
  const int bytes = element_bytes(type);
  if (mn_major && type != kWgmmaBf16)
    throw Error(
        "wgmma: a transposed (MN-major) operand must be bf16 (the PTX ISA allows "
        "transposes for 16-bit types only)");
  if (!mn_major && d.swizzle &&
      (d.start % d.swizzle) + kOperandBytes > static_cast<uint32_t>(d.swizzle))
    throw Error(
        fmt::format("wgmma: a K-major operand's 32 bytes of K at {:#x} cross its {}-byte "
                    "swizzle line",
                    d.start, d.swizzle));
  const EmulatedCta& cta = EmulatedCta::current();
  const uint32_t off = element_offset(d, mn, k, bytes, mn_major);
  if (off + static_cast<uint32_t>(bytes) > cta.smem_bytes)
    throw Error(
        fmt::format("wgmma: operand element ({}, {}) at shared offset {:#x} lies past the "
                    "CTA's {} bytes",
                    mn, k, off, cta.smem_bytes));
  uint32_t raw = 0;
  std::memcpy(&raw, cta.smem + off, static_cast<std::size_t>(bytes));
  return type == kWgmmaBf16 ? bf16_at(raw, 0) : tf32_value(raw);
}

// The calling thread's accumulator coordinates: element i of its n / 2 floats.
struct Fragment {
  int warp, lane;
  int row(int i) const { return 16 * warp + lane / 4 + 8 * (i % 4 / 2); }
  static int col(int i, int lane) { return 8 * (i / 4) + 2 * (lane % 4) + i % 2; }
};

Fragment my_fragment() {
  const EmulatedCta& cta = EmulatedCta::current();
  return {cta.thread() / 32 % 4, cta.lane()};
}

void check_shape(int n, int type) {
  if (n < 8 || n > 256 || n % 8 != 0)
    throw Error(fmt::format("wgmma: N = {} (a multiple of 8 from 8 to 256)", n));
  element_bytes(type);
}

// Issues one MMA: its result from the accumulators' current input (the pending result of an
// earlier MMA into the same registers, if any), NaN in the registers until the wait.
void issue(float* d, int n, std::function<void(const float*, float*)> compute, bool accumulate) {
  EmulatedCta& cta = EmulatedCta::current();
  const std::size_t count = static_cast<std::size_t>(n / 2);
  std::vector<float> in(d, d + count);
  const EmulatedCta::PendingMma* earlier = nullptr;
  for (const auto& op : cta.mma_open)
    if (op.d == d) earlier = &op;
  if (!earlier)
    for (auto g = cta.mma_committed.rbegin(); g != cta.mma_committed.rend() && !earlier; ++g)
      for (const auto& op : *g)
        if (op.d == d) earlier = &op;
  if (earlier) {
    if (earlier->out.size() != count)
      throw Error(
          fmt::format("wgmma: thread {} issues an N = {} MMA into accumulators a pending "
                      "N = {} MMA writes",
                      cta.thread(), n, 2 * earlier->out.size()));
    in = earlier->out;
  }
  if (!accumulate) std::fill(in.begin(), in.end(), 0.0f);
  std::vector<float> out(count);
  compute(in.data(), out.data());
  std::fill(d, d + count, std::numeric_limits<float>::quiet_NaN());
  cta.mma_open.push_back({d, std::move(in), std::move(out), std::move(compute)});
}

// Issues d (+)= scale A B^T for the calling thread's fragment: A's element (row, k) from
// `a_value`, B's from descriptor `b`.
void issue_product(float* d, int n, int type, uint64_t b, bool trans_b, double scale,
                   bool accumulate, std::function<float(int row, int k)> a_value) {
  const Descriptor db = decode(b);
  const Fragment f = my_fragment();
  const int k_size = kOperandBytes / element_bytes(type);
  issue(
      d, n,
      [=](const float* in, float* out) {
        for (int i = 0; i < n / 2; ++i) {
          double sum = 0.0;
          for (int k = 0; k < k_size; ++k)
            sum += static_cast<double>(a_value(f.row(i), k)) *
                   read_operand(db, Fragment::col(i, f.lane), k, type, trans_b);
          out[i] = static_cast<float>(in[i] + scale * sum);
        }
      },
      accumulate);
}

// Records a warpgroup-collective instruction in the thread's log (cta_emulator.h): its kind,
// shape and flags, and the descriptors the warpgroup must share.
void log_collective(uint64_t kind, uint64_t a, uint64_t b) {
  uint64_t h = kind * 0x9e3779b97f4a7c15ull;
  for (uint64_t x : {a, b}) h = (h ^ x) * 0x100000001b3ull;
  EmulatedCta::current().warpgroup_log.push_back(h);
}

uint64_t mma_kind(int form, int n, int type, bool accumulate, int scale_a, int scale_b,
                  bool trans_a, bool trans_b) {
  return static_cast<uint64_t>(form) | static_cast<uint64_t>(n) << 4 |
         static_cast<uint64_t>(type) << 16 | static_cast<uint64_t>(accumulate) << 20 |
         static_cast<uint64_t>(scale_a + 1) << 21 | static_cast<uint64_t>(scale_b + 1) << 23 |
         static_cast<uint64_t>(trans_a) << 25 | static_cast<uint64_t>(trans_b) << 26;
}

}  // namespace

uint32_t smem_offset(const void* p) {
  const EmulatedCta& cta = EmulatedCta::current();
  const auto* b = static_cast<const unsigned char*>(p);
  if (b < cta.smem || b > cta.smem + cta.smem_bytes)
    throw Error("smem_offset: the address is not in the emulated CTA's shared memory");
  return static_cast<uint32_t>(b - cta.smem);
}

void wgmma_fence() {
  log_collective(2, 0, 0);
}

void wgmma_commit() {
  log_collective(3, 0, 0);
  EmulatedCta& cta = EmulatedCta::current();
  cta.mma_committed.push_back(std::move(cta.mma_open));
  cta.mma_open.clear();
}

void wgmma_wait(int pending) {
  log_collective(4, static_cast<uint64_t>(pending), 0);
  EmulatedCta& cta = EmulatedCta::current();
  const std::size_t keep = static_cast<std::size_t>(pending < 0 ? 0 : pending);
  while (cta.mma_committed.size() > keep) {
    for (auto& op : cta.mma_committed.front()) {
      std::vector<float> again(op.out.size());
      op.compute(op.in.data(), again.data());
      if (std::memcmp(again.data(), op.out.data(), again.size() * sizeof(float)) != 0)
        throw Error(
            fmt::format("wgmma: thread {}: a warpgroup MMA's shared-memory operands "
                        "changed between its issue and its wait",
                        cta.thread()));
      std::copy(op.out.begin(), op.out.end(), op.d);
    }
    cta.mma_committed.erase(cta.mma_committed.begin());
  }
}

void wgmma_ss(float* d, int n, int type, uint64_t a, uint64_t b, bool accumulate, int scale_a,
              int scale_b, bool trans_a, bool trans_b) {
  check_shape(n, type);
  log_collective(mma_kind(1, n, type, accumulate, scale_a, scale_b, trans_a, trans_b), a, b);
  const Descriptor da = decode(a);
  issue_product(d, n, type, b, trans_b, scale_a * scale_b, accumulate,
                [=](int row, int k) { return read_operand(da, row, k, type, trans_a); });
}

void wgmma_rs(float* d, int n, int type, const uint32_t (&a)[4], uint64_t b, bool accumulate,
              int scale_a, int scale_b, bool trans_b) {
  check_shape(n, type);
  log_collective(mma_kind(0, n, type, accumulate, scale_a, scale_b, false, trans_b), 0, b);
  EmulatedCta& cta = EmulatedCta::current();
  struct Regs {
    uint32_t r[4];
  };
  cta.publish(Regs{{a[0], a[1], a[2], a[3]}});
  // The warp's 16 rows of A (the warpgroup's rows 16 w .. 16 w + 15), as mma.sync's A fragments
  // hold them.
  const int k_size = kOperandBytes / element_bytes(type);
  std::vector<float> rows(static_cast<std::size_t>(16 * k_size));
  for (int l = 0; l < 32; ++l) {
    const Regs r = cta.peer<Regs>(l);
    if (type == kWgmmaBf16)
      place_a_fragment_bf16(r.r, l, rows.data(), k_size);
    else
      place_a_fragment_tf32(r.r, l, rows.data(), k_size);
  }
  cta.done();
  issue_product(d, n, type, b, trans_b, scale_a * scale_b, accumulate,
                [rows = std::move(rows), k_size](int row, int k) {
                  return rows[static_cast<std::size_t>(row % 16 * k_size + k)];
                });
}

}  // namespace khk_host
