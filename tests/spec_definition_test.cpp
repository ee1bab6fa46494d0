// Definitions: the official files parse and round-trip; the shipped copies are the official
// files; malformed definitions give an error naming the file and the field.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/spec/dataset.h"
#include "kh/spec/definition.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

nlohmann::json unordered(const Json& j) {
  return nlohmann::json::parse(j.dump());
}

TEST(Definition, EveryOfficialDefinitionParsesAndRoundTrips) {
  const auto files = find_files(test::shared_dir() / "definitions", ".json");
  ASSERT_EQ(files.size(), 5u) << "expected the five official definitions in ../shared";
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const Json original = read_json_file(file);
    const Definition def = load_definition(file);
    EXPECT_EQ(unordered(def.to_json()), unordered(original));
    const Definition again = Definition::from_json(JsonCursor(def.to_json(), "roundtrip"));
    EXPECT_EQ(again.to_json().dump(), def.to_json().dump());
    // The order of inputs is the call signature: kept exactly as written.
    ASSERT_EQ(def.inputs.size(), original["inputs"].size());
    std::size_t i = 0;
    for (auto it = original["inputs"].begin(); it != original["inputs"].end(); ++it, ++i)
      EXPECT_EQ(def.inputs[i].name, it.key());
  }
}

TEST(Definition, ShippedDefinitionsAreTheOfficialFiles) {
  for (const auto& file : find_files(test::shared_dir() / "definitions", ".json")) {
    const Definition shipped = test::shipped_definition(file.stem().string());
    EXPECT_EQ(unordered(shipped.to_json()), unordered(read_json_file(file))) << file;
  }
}

TEST(Definition, ParsesTypesScalarsAndOptionalInputs) {
  const Definition d = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  EXPECT_EQ(d.op_type, "gdn");
  EXPECT_TRUE(d.find_input("scale")->is_scalar());
  EXPECT_TRUE(d.find_input("state")->optional);
  EXPECT_EQ(d.find_input("q")->dtype, DType::kBFloat16);
  EXPECT_TRUE(d.find_axis("head_size")->is_const);
  EXPECT_EQ(d.find_axis("head_size")->value, 128);
  EXPECT_EQ(d.shape_of(*d.find_output("new_state"),
                       {{"batch_size", 3}, {"num_v_heads", 8}, {"head_size", 128}}),
            (Shape{3, 8, 128, 128}));
  const Definition moe =
      test::shipped_definition("moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048");
  EXPECT_EQ(moe.find_input("hidden_states")->dtype, DType::kFloat8E4M3);
  EXPECT_EQ(moe.find_input("local_expert_offset")->dtype, DType::kInt32);
}

std::string load_error(const std::string& text) {
  test::ScopedTempDir dir;
  const auto p = test::write_file(dir.path() / "bad_def.json", text);
  try {
    load_definition(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

const char* kGood = R"({"name":"vadd","op_type":"op",
  "axes":{"N":{"type":"var"},"D":{"type":"const","value":4}},
  "inputs":{"x":{"shape":["N","D"],"dtype":"bfloat16"},"alpha":{"shape":null,"dtype":"float32"}},
  "outputs":{"y":{"shape":["N","D"],"dtype":"bfloat16"}},
  "reference":"import torch\ndef run(x, alpha):\n    return x\n"})";

std::string mutate(const std::string& from, const std::string& to) {
  std::string s = kGood;
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

TEST(Definition, MalformedFilesGiveErrorsNamingFileAndField) {
  EXPECT_EQ(load_error(kGood), "no error");
  EXPECT_THAT(load_error(std::string(kGood).substr(0, 60)),
              HasSubstr("bad_def.json: invalid JSON"));
  EXPECT_THAT(load_error(mutate(R"("dtype":"bfloat16"},"alpha")", R"("dtype":"bf17"},"alpha")")),
              HasSubstr("bad_def.json: inputs.x.dtype: unknown dtype \"bf17\""));
  EXPECT_THAT(load_error(mutate(R"("shape":["N","D"],"dtype":"bfloat16"}})",
                                R"("shape":["N","M"],"dtype":"bfloat16"}})")),
              HasSubstr("outputs.y.shape[1]: undeclared axis \"M\""));
  EXPECT_THAT(
      load_error(mutate(R"({"type":"const","value":4})", R"({"type":"const","value":"4"})")),
      HasSubstr("axes.D.value: expected an integer, got string \"4\""));
  EXPECT_THAT(load_error(mutate(R"({"type":"var"})", R"({"type":"variable"})")),
              HasSubstr("axes.N.type: expected \"const\" or \"var\""));
  EXPECT_THAT(load_error(mutate("def run(", "def walk(")),
              HasSubstr("reference: the reference must define a top-level function `run`"));
  EXPECT_THAT(load_error(mutate(R"("outputs":{"y")", R"("outputs":{"x")")),
              HasSubstr("outputs.x: name is used by an input too"));
  EXPECT_THAT(load_error(mutate(R"("name":"vadd",)", "")),
              HasSubstr("missing required field 'name'"));
  EXPECT_THAT(load_error(mutate(R"("shape":null)", R"("shape":5)")),
              HasSubstr("inputs.alpha.shape: expected an array, got number 5"));
}

}  // namespace
}  // namespace kh
