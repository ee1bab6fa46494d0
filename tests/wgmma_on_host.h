// Hopper's warpgroup MMA (wgmma) for kernel bodies compiled by the host compiler and run by the
// CTA emulator (cta_emulator.h). A kernel's wgmma wrapper declares these in namespace khk_host
// for its host build (as mma_tiles.cuh does for mma.sync) and calls them where the device build
// has the PTX; tests/wgmma_on_host.cpp defines them.
//
// What is emulated (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
// - wgmma.mma_async m64nNk(32 bytes of operand): bf16 (k16) or tf32 (k8) operands, fp32
//   accumulators; A from shared memory (a descriptor) or from registers, B from shared memory;
//   scale-d (accumulate or overwrite), imm-scale-a/b (+1 or -1), and the transposes (MN-major
//   operands, bf16 only). The accumulator fragment of thread t (warp w = t / 32 % 4 of its
//   warpgroup, lane l): d[4 j + e] = D[16 w + l / 4 + 8 (e / 2)][8 j + 2 (l % 4) + e % 2].
// - Matrix descriptors: start address, leading and stride byte offsets, the 128-, 64- and
//   32-byte swizzles (the XOR of address bits [4, 4 + b) with [7, 7 + b) of the final byte
//   address) and no swizzle (8 x 16-byte core matrices); a shared address is the byte offset
//   from the emulated CTA's shared memory (smem_offset). A non-zero base offset is an error.
// - Asynchrony, strictly: at issue the accumulators are computed and then overwritten with NaN,
//   so a thread that reads them before wgmma_wait sees NaN; wgmma_wait computes each MMA again
//   from shared memory as it is then and throws if the result differs (an operand overwritten
//   before the wait: undefined on the device); an MMA that accumulates into registers another
//   pending MMA writes chains on that MMA's result, as the hardware's in-order pipe does.
// Products are exact and summed in double, then rounded once onto the accumulator, as the
// mma.sync emulation (cuda_on_host.cpp) does. Each thread computes its own fragment from the
// descriptors it was given; the warpgroup's threads are checked against each other at the end of
// the run: the same fences, MMAs (shape, flags, descriptors), commits and waits in the same order
// (EmulatedCta::warpgroup_log).
#pragma once

#include <cstdint>

namespace khk_host {

enum WgmmaType : int { kWgmmaBf16 = 0, kWgmmaTf32 = 1 };

/// The shared address of `p` (in the emulated CTA's shared memory) as a descriptor holds it.
uint32_t smem_offset(const void* p);

void wgmma_fence();
void wgmma_commit();
/// Waits until at most `pending` committed groups of this thread are still in flight.
void wgmma_wait(int pending);

/// d (+)= scale_a A * scale_b B^T: A 64 x k from descriptor `a` (M-major with trans_a), B n x k
/// from descriptor `b` (N-major with trans_b); `d` holds n / 2 floats.
void wgmma_ss(float* d, int n, int type, uint64_t a, uint64_t b, bool accumulate, int scale_a,
              int scale_b, bool trans_a, bool trans_b);
/// The same with A from registers: the warp's 16 rows as mma.m16n8k16's (bf16, 4 registers) or
/// mma.m16n8k8's (tf32, 4 registers) A fragment.
void wgmma_rs(float* d, int n, int type, const uint32_t (&a)[4], uint64_t b, bool accumulate,
              int scale_a, int scale_b, bool trans_b);

}  // namespace khk_host
