// The warp-collective PTX of the kernels, for their host builds under the CTA emulator: every
// lane publishes its fragment registers (or row address), then computes its own result from the
// whole warp's, by the fragment layouts of the PTX ISA ("Matrix fragments for mma.m16n8k16",
// "... mma.m16n8k8" with .tf32, and ldmatrix). Products are exact and summed in double, then
// rounded once: at least as accurate as the tensor cores, which is what a check against a
// reference needs. Also the two hooks of the shared-memory pipeline barriers' host form
// (kernels' pipeline_barrier.cuh): a wait that gives way, an arrival that counts as progress; and
// deferred cp.async (copies that land only when their thread waits for them), for kernels whose
// host branch asks for it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cta_emulator.h"
#include "operand_bits.h"

namespace khk_host {
namespace {

using kh::test::EmulatedCta;

uint16_t b16_at(const void* row, int col) {
  uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(row) + 2 * col, sizeof v);
  return v;
}

struct MmaFragments {
  uint32_t a[4], b[2];
};

// d += (A B)[rows g, g + 8][columns 2c, 2c + 1] of lane (g, c): the accumulator fragment of an
// m16n8 tile.
template <int K>
void accumulate(float (&d)[4], const float (&A)[16][K], const float (&B)[K][8], int lane) {
  const int g = lane / 4, c = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * c + i % 2;
    double sum = 0.0;
    for (int k = 0; k < K; ++k) sum += static_cast<double>(A[row][k]) * B[k][col];
    d[i] = static_cast<float>(d[i] + sum);
  }
}

}  // namespace

void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool trans) {
  EmulatedCta& cta = EmulatedCta::current();
  // The GPU faults (misaligned address) on a row that is not 16-byte aligned; the emulated
  // shared memory is 16-byte aligned, so a misaligned row here is a layout bug in the kernel.
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    std::fprintf(stderr, "ldmatrix: lane %d's row address %p is not 16-byte aligned\n", cta.lane(),
                 row);
    std::abort();
  }
  cta.publish(row);
  const int lane = cta.lane(), g = lane / 4, c = lane % 4;
  for (int m = 0; m < 4; ++m) {
    uint16_t lo, hi;
    if (trans) {  // elements [2c][g] and [2c + 1][g] of matrix m
      lo = b16_at(cta.peer<const void*>(8 * m + 2 * c), g);
      hi = b16_at(cta.peer<const void*>(8 * m + 2 * c + 1), g);
    } else {  // elements [g][2c] and [g][2c + 1]
      const void* p = cta.peer<const void*>(8 * m + g);
      lo = b16_at(p, 2 * c);
      hi = b16_at(p, 2 * c + 1);
    }
    r[m] = static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
  }
  cta.done();
}

void async_copy(void* dst, const void* src, int bytes) {
  EmulatedCta::current().async_open.push_back({static_cast<unsigned char*>(dst),
                                               static_cast<const unsigned char*>(src), bytes});
}

void async_commit() {
  EmulatedCta& cta = EmulatedCta::current();
  cta.async_committed.push_back(std::move(cta.async_open));
  cta.async_open.clear();
}

void async_wait(int pending) { EmulatedCta::current().land_async_copies(pending); }

void async_wait_all() { EmulatedCta::current().land_all_async_copies(); }

void pipeline_yield() { EmulatedCta::current().yield(); }

void pipeline_progress() { EmulatedCta::current().progress(); }

void pipeline_defer(void (*fn)(void*), void* arg) { EmulatedCta::current().defer(fn, arg); }

void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  EmulatedCta& cta = EmulatedCta::current();
  cta.publish(MmaFragments{{a[0], a[1], a[2], a[3]}, {b0, b1}});
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const MmaFragments f = cta.peer<MmaFragments>(l);
    const int g = l / 4, c = l % 4;
    place_a_fragment_bf16(f.a, l, &A[0][0], 16);
    for (int h = 0; h < 2; ++h) {
      B[2 * c + h][g] = bf16_at(f.b[0], h);
      B[2 * c + 8 + h][g] = bf16_at(f.b[1], h);
    }
  }
  cta.done();
  accumulate(d, A, B, cta.lane());
}

void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  EmulatedCta& cta = EmulatedCta::current();
  cta.publish(MmaFragments{{a[0], a[1], a[2], a[3]}, {b0, b1}});
  float A[16][8], B[8][8];
  for (int l = 0; l < 32; ++l) {
    const MmaFragments f = cta.peer<MmaFragments>(l);
    const int g = l / 4, c = l % 4;
    place_a_fragment_tf32(f.a, l, &A[0][0], 8);
    B[c][g] = tf32_value(f.b[0]);
    B[c + 4][g] = tf32_value(f.b[1]);
  }
  cta.done();
  accumulate(d, A, B, cta.lane());
}

}  // namespace khk_host
