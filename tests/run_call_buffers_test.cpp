// CallBuffers' strict checks without a GPU, on a backend that counts what crosses it: an
// unchanged input is cleared by its digest, with no byte brought back to the host; a changed one
// is found and located; poisoned outputs hold the poison.
#include <cmath>
#include <cstring>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend_doubles.h"
#include "kh/gen/input_generator.h"
#include "kh/run/call_buffers.h"
#include "kh/run/memory_backend.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

// The cpu backend, counting the bytes each direction moves.
class CountingBackend final : public test::ForwardingBackend {
 public:
  void upload(void* dst, const void* src, std::size_t bytes) override {
    uploaded += bytes;
    ForwardingBackend::upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    downloaded += bytes;
    ForwardingBackend::download(dst, src, bytes);
  }

  std::size_t uploaded = 0, downloaded = 0;
};

struct DecodeCall {
  Definition def = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  Workload w = [] {
    Workload x;
    x.uuid = "call-buffers";
    x.axes = {{"batch_size", 2}};
    return x;
  }();
  InputGenerator gen{def, w, test::source_dir(), {}};
  InputSet inputs = gen.generate(0);
};

TEST(CallBuffers, AnUnchangedInputIsClearedWithoutBringingItBack) {
  CountingBackend backend;
  DecodeCall c;
  CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs, 0);
  backend.downloaded = 0;
  EXPECT_EQ(buffers.modified_input(c.inputs), std::nullopt);
  EXPECT_EQ(backend.downloaded, 0u);
}

TEST(CallBuffers, AChangedInputIsFoundAndLocated) {
  CountingBackend backend;
  DecodeCall c;
  CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs, 0);
  // The candidate writes into v (input 2: q, k, v, ...) at element 5.
  const DLTensor& v = buffers.tensors().at(2);
  ASSERT_EQ(c.def.inputs.at(2).name, "v");
  const std::uint16_t bits = 0x3f80;  // bf16 1.0
  std::memcpy(static_cast<char*>(v.data) + 5 * sizeof bits, &bits, sizeof bits);
  const auto where = buffers.modified_input(c.inputs);
  ASSERT_TRUE(where.has_value());
  EXPECT_THAT(*where, HasSubstr("modified input 'v' at [0, 0, 0, 5]"));
}

TEST(CallBuffers, AChangedScalarIsFound) {
  CountingBackend backend;
  DecodeCall c;
  CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs, 0);
  ASSERT_EQ(c.def.inputs.back().name, "scale");
  const DLTensor& scale = buffers.tensors().at(c.def.inputs.size() - 1);
  ASSERT_EQ(scale.device.device_type, kDLCPU);
  EXPECT_EQ(buffers.modified_input(c.inputs), std::nullopt);
  *static_cast<float*>(scale.data) = 0.5f;
  const auto where = buffers.modified_input(c.inputs);
  ASSERT_TRUE(where.has_value());
  EXPECT_THAT(*where, HasSubstr("modified input 'scale' (a scalar)"));
}

TEST(CallBuffers, PoisonedOutputsHoldThePoisonEveryTime) {
  CountingBackend backend;
  DecodeCall c;
  CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs, 0);
  for (int round = 0; round < 2; ++round) {
    backend.uploaded = 0;
    buffers.poison_outputs();
    EXPECT_EQ(backend.uploaded, 0u) << "the poison is written where the outputs live";
    const OutputSet out = buffers.download_outputs();
    for (const auto& o : out) {
      ASSERT_GT(o.tensor.numel(), 0);
      EXPECT_TRUE(std::isnan(o.tensor.get(0))) << o.name << " round " << round;
      EXPECT_TRUE(std::isnan(o.tensor.get(o.tensor.numel() - 1))) << o.name << " round " << round;
    }
  }
}

TEST(CallBuffers, OutputDigestsSeeOneChangedBit) {
  CountingBackend backend;
  DecodeCall c;
  CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs, 0);
  buffers.poison_outputs();
  const auto before = buffers.output_digests();
  ASSERT_EQ(before.size(), c.def.outputs.size());
  EXPECT_EQ(buffers.output_digests(), before);
  const DLTensor& last = buffers.tensors().back();
  static_cast<unsigned char*>(last.data)[17] ^= 1;
  EXPECT_NE(buffers.output_digests(), before);
}

TEST(CallBuffers, IntactRedZonesAreClearedWithoutBringingThemBack) {
  CountingBackend backend;
  DecodeCall c;
  CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs);
  backend.downloaded = 0;
  EXPECT_EQ(buffers.damaged_red_zone(), std::nullopt);
  EXPECT_EQ(backend.downloaded, 0u);
}

TEST(CallBuffers, AWriteIntoARedZoneIsFoundWithItsSideAndDistance) {
  CountingBackend backend;
  DecodeCall c;
  {
    CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs);
    const DLTensor& out = buffers.tensors().back();  // new_state
    const std::size_t bytes =
        storage_bytes(c.def.outputs.back().dtype,
                      shape_numel(c.def.shape_of(c.def.outputs.back(), c.gen.axes())));
    static_cast<unsigned char*>(out.data)[bytes + 3] = 0;
    const auto where = buffers.damaged_red_zone();
    ASSERT_TRUE(where.has_value());
    EXPECT_THAT(*where, HasSubstr("wrote past the end of output 'new_state'"));
    EXPECT_THAT(*where, HasSubstr("changed 3 bytes after the end of the data"));
  }
  {
    CallBuffers buffers(backend, c.def, c.gen.axes(), c.inputs);
    const DLTensor& q = buffers.tensors().front();
    for (int i = 1; i <= 4; ++i) static_cast<unsigned char*>(q.data)[-i] = 0;  // element -1
    const auto where = buffers.damaged_red_zone();
    ASSERT_TRUE(where.has_value());
    EXPECT_THAT(*where, HasSubstr("wrote before the start of input 'q'"));
    EXPECT_THAT(*where, HasSubstr("changed 3 bytes before the data"));
  }
}

}  // namespace
}  // namespace kh
