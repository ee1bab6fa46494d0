// Malformed input never crashes: thousands of random mutations (byte changes, truncations,
// deletions, duplications) of real definition, workload and safetensors files either load or
// fail with a kh::Error; any other exception or a crash fails the test.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/safetensors.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

constexpr int kMutations = 1500;

std::string mutate(const std::string& s, std::mt19937& rng) {
  std::string m = s;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !m.empty(); ++e) {
    const std::size_t at = rng() % m.size();
    switch (rng() % 5) {
      case 0:
        m[at] = static_cast<char>(rng() % 256);
        break;
      case 1:
        m.resize(at);
        break;
      case 2:
        m.erase(at, 1 + rng() % 16);
        break;
      case 3:
        m.insert(at, m.substr(at, 1 + rng() % 16));
        break;
      default:  // a structural character where it may hurt most
        m[at] = "{}[]\":,0-e"[rng() % 10];
    }
  }
  return m;
}

template <typename Load>
void expect_only_kh_errors(const std::string& original, const std::filesystem::path& path,
                           Load load) {
  std::mt19937 rng(1234);
  int errors = 0;
  for (int i = 0; i < kMutations; ++i) {
    const std::string text = mutate(original, rng);
    test::write_file(path, text);
    try {
      load();
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      FAIL() << "mutation " << i << " escaped as " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(errors, kMutations / 2);  // the mutations are mostly fatal: they were exercised
}

TEST(Fuzz, MutatedDefinitionsFailCleanly) {
  test::ScopedTempDir dir;
  const std::string def = read_text_file(
      test::source_dir() /
      "definitions/moe/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048.json");
  const auto path = dir.path() / "def.json";
  expect_only_kh_errors(def, path, [&] { load_definition(path); });
}

TEST(Fuzz, MutatedWorkloadFilesFailCleanly) {
  test::ScopedTempDir dir;
  for (const char* name : {"gdn/gdn_prefill_qk4_v8_d128_k_last",
                           "moe/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"}) {
    const std::string def =
        read_text_file(test::source_dir() / "definitions" / (std::string(name) + ".json"));
    test::write_file(dir.path() / "definitions" / (std::string(name) + ".json"), def);
    std::string lines =
        read_text_file(test::source_dir() / "workloads" / (std::string(name) + ".jsonl"));
    lines = lines.substr(0, lines.find('\n', lines.find('\n') + 1) + 1);  // first two lines
    const auto path = dir.path() / "workloads" / (std::string(name) + ".jsonl");
    expect_only_kh_errors(lines, path, [&] { Dataset::open(dir.path()); });
    std::filesystem::remove(path);
  }
}

TEST(Fuzz, MutatedSafetensorsFailCleanly) {
  test::ScopedTempDir dir;
  HostTensor a(DType::kBFloat16, {4, 8}), b(DType::kInt32, {3}), c(DType::kFloat8E4M3, {16});
  write_safetensors(dir.path() / "ok.safetensors", {{"a", &a}, {"b", &b}, {"c", &c}}, {{"k", "v"}});
  const std::string original = read_text_file(dir.path() / "ok.safetensors");
  const auto path = dir.path() / "m.safetensors";
  std::mt19937 rng(99);
  int errors = 0;
  for (int i = 0; i < kMutations; ++i) {
    // Mutate the header region mostly: that is where the parsing is.
    std::string text = original;
    const std::string head = mutate(text.substr(0, 120), rng);
    text = head + text.substr(std::min<std::size_t>(120, text.size()));
    test::write_file(path, text);
    try {
      SafetensorsReader r(path);
      for (const auto& e : r.entries()) r.load(e.name);
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      FAIL() << "mutation " << i << " escaped as " << typeid(e).name() << ": " << e.what();
    }
  }
  EXPECT_GT(errors, kMutations / 2);
}

}  // namespace
}  // namespace kh
