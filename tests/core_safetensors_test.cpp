// safetensors: round trips of every dtype with metadata, and a clear error naming the file and
// the field for each kind of malformed file.
#include <cstring>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/safetensors.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

std::string with_header(const std::string& header, const std::string& data = "",
                        std::uint64_t declared_len = UINT64_MAX) {
  const std::uint64_t n = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string error_of(const std::filesystem::path& p, const std::string& tensor = "") {
  try {
    SafetensorsReader r(p);
    if (!tensor.empty()) r.load(tensor);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  test::ScopedTempDir dir;
  std::vector<HostTensor> tensors;
  NamedTensors named;
  std::vector<std::string> names;
  for (DType t : kAllDTypes) {
    HostTensor x(t, {3, 5});
    for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 7) - 3);
    tensors.push_back(std::move(x));
    names.push_back(std::string(dtype_name(t)));
  }
  tensors.emplace_back(DType::kFloat32, Shape{});  // a scalar
  tensors.back().set(0, 2.5);
  names.push_back("scalar");
  tensors.emplace_back(DType::kInt32, Shape{0, 4});  // an empty tensor
  names.push_back("empty");
  for (std::size_t i = 0; i < tensors.size(); ++i) named.emplace_back(names[i], &tensors[i]);
  const auto path = dir.path() / "all.safetensors";
  write_safetensors(path, named, {{"definition", "x"}, {"trial", "3"}});

  SafetensorsReader r(path);
  EXPECT_EQ(r.metadata().at("definition"), "x");
  EXPECT_EQ(r.metadata().at("trial"), "3");
  ASSERT_EQ(r.entries().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const HostTensor back = r.load(names[i]);
    EXPECT_TRUE(back.bytes_equal(tensors[i])) << names[i];
  }
  // The data section starts 8-byte aligned.
  std::ifstream in(path, std::ios::binary);
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
}

TEST(Safetensors, MalformedFilesGiveErrorsNamingFileAndField) {
  test::ScopedTempDir dir;
  auto file = [&](const std::string& name, const std::string& bytes) {
    return test::write_file(dir.path() / name, bytes);
  };
  const std::string ok_entry = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

  auto p = file("short.safetensors", "abc");
  EXPECT_THAT(error_of(p), HasSubstr("short.safetensors: truncated"));

  p = file("len.safetensors", with_header("{}", "", 1000));
  EXPECT_THAT(error_of(p), HasSubstr("header length 1000 runs past the end of the file"));

  p = file("json.safetensors", with_header(R"({"x":{"dtype":)"));
  EXPECT_THAT(error_of(p), HasSubstr("json.safetensors (safetensors header): invalid JSON"));

  p = file(
      "dtype.safetensors",
      with_header(R"({"x":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", std::string(8, 'a')));
  EXPECT_THAT(error_of(p),
              HasSubstr("dtype.safetensors: x.dtype: unknown safetensors dtype \"F7\""));

  p = file("size.safetensors",
           with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                       std::string(8, 'a')));
  EXPECT_THAT(error_of(p), HasSubstr("x.data_offsets: range holds 8 bytes but F32 [3] needs 12"));

  p = file("past.safetensors", with_header("{" + ok_entry + "}", std::string(4, 'a')));
  EXPECT_THAT(error_of(p), HasSubstr("runs past the data section (4 bytes)"));

  p = file(
      "overlap.safetensors",
      with_header("{" + ok_entry + R"(,"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                  std::string(12, 'a')));
  EXPECT_THAT(error_of(p), HasSubstr("overlap"));

  p = file("shape.safetensors",
           with_header(R"({"x":{"dtype":"F32","shape":"two","data_offsets":[0,8]}})",
                       std::string(8, 'a')));
  EXPECT_THAT(error_of(p), HasSubstr("x.shape: expected an array"));

  p = file("missing.safetensors", with_header("{" + ok_entry + "}", std::string(8, 'a')));
  EXPECT_THAT(error_of(p, "nope"), HasSubstr("no tensor named 'nope' (has: x)"));

  EXPECT_THAT(error_of(dir.path() / "absent.safetensors"), HasSubstr("cannot open"));
}

}  // namespace
}  // namespace kh
