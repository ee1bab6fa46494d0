// The kh command end to end: validate on good and broken datasets, gen writes what it says,
// check passes the reference's own outputs and rejects a planted error with exit status 3, and
// build takes a candidate's params after '@' as sweep does.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include "kh/core/safetensors.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

test::CommandResult kh(const std::string& args) {
  test::CommandResult r = test::run_command(std::string(KH_BINARY) + " " + args);
  r.out += r.err;  // these tests read both streams
  return r;
}

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";
const std::string kUuid = "901e5104-dccb-4c3f-ae13-ef4d31a4d456";

TEST(Cli, ValidateSummarisesTheShippedDataset) {
  const test::CommandResult r = kh("validate --root " + test::source_dir().string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("5 definitions, 324 workloads, all valid"));
  const test::CommandResult j = kh("validate --json --root " + test::source_dir().string());
  EXPECT_THAT(j.out, HasSubstr("\"total_workloads\": 324"));
}

TEST(Cli, RooflineGivesEveryWorkloadItsCostAndFloor) {
  test::ScopedTempDir dir;
  const auto ceilings = test::write_file(
      dir.path() / "ceilings.json",
      R"({"gpu": "test", "copy_bytes_per_second": 1e12, "bf16_flops_per_second": 1e15,
          "fp8_flops_per_second": 2e15, "fp32_flops_per_second": 1e14,
          "empty_kernel_seconds": 1e-6, "gather_latency_seconds": 1e-7})");
  const test::CommandResult r =
      test::run_command(std::string(KH_BINARY) + " roofline " + kDecode + " --json --root " +
                        test::source_dir().string() + " --ceilings " + ceilings.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const Json j = parse_json(r.out, "kh roofline output");
  ASSERT_EQ(j.at("workloads").size(), 54u);
  for (const auto& w : j.at("workloads")) {
    // Memory-bound: the floor is the bytes over the copy rate.
    const double bytes = w.at("bytes").get<double>();
    EXPECT_GT(bytes, 0);
    EXPECT_DOUBLE_EQ(w.at("floor_seconds").get<double>(), bytes / 1e12);
  }
}

TEST(Cli, ValidateReportsABrokenDatasetInOneLine) {
  test::ScopedTempDir dir;
  test::write_file(dir.path() / "definitions/x/bad.json", R"({"name": "bad", "op_type": 3})");
  const test::CommandResult r = kh("validate --root " + dir.path().string());
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("kh: error: "));
  EXPECT_THAT(r.out, HasSubstr("bad.json: op_type: expected a string, got number 3"));
}

TEST(Cli, GenThenCheckPassesTheReferenceAndRejectsAPlantedError) {
  test::ScopedTempDir dir;
  const std::string root = " --root " + test::source_dir().string();
  const std::string file = (dir.path() / "x.safetensors").string();
  test::CommandResult r =
      kh("gen -d " + kDecode + " -w " + kUuid + " --reference -o " + file + root);
  ASSERT_EQ(r.status, 0) << r.out;

  SafetensorsReader reader(file);
  EXPECT_EQ(reader.metadata().at("workload"), kUuid);
  HostTensor out = reader.load("ref.output"), state = reader.load("ref.new_state");
  const std::string solution = (dir.path() / "solution.safetensors").string();
  write_safetensors(solution, {{"output", &out}, {"output.new_state", &state}});
  r = kh("check -d " + kDecode + " -w " + kUuid + " --outputs " + solution + root);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("PASSED"));

  state.set(77, state.get(77) + 1.0);  // far beyond atol and rtol
  write_safetensors(solution, {{"output", &out}, {"new_state", &state}});
  r = kh("check --json -d " + kDecode + " -w " + kUuid + " --outputs " + solution + root);
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\"status\": \"INCORRECT_NUMERICAL\""));
  EXPECT_THAT(r.out, HasSubstr("[0, 0, 0, 77]"));

  r = kh("check -d " + kDecode + " -w " + kUuid + " --trial 1 --outputs " + solution + root);
  EXPECT_EQ(r.status, 3) << "another trial draws other inputs: " << r.out;
}

TEST(Cli, BuildTakesEachCandidatesOwnParamsAfterTheAt) {
  test::ScopedTempDir dir;
  const std::string folder = (test::source_dir() / "tests/candidates/gdn_decode_cpp").string();
  const test::CommandResult r =
      kh("build " + folder + "@FAULT=segfault " + folder + " --json --jobs 2 --cache " +
         (dir.path() / "cache").string());
  ASSERT_EQ(r.status, 0) << r.out;
  // The variant and the default, each built with the params it asked for.
  EXPECT_THAT(r.out, HasSubstr("\"FAULT\": \"segfault\""));
  EXPECT_THAT(r.out, HasSubstr("\"FAULT\": \"none\""));
  const test::CommandResult bad =
      kh("build " + folder + "@FAULT --cache " + (dir.path() / "cache").string());
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.out, HasSubstr("is not NAME=value"));
}

}  // namespace
}  // namespace kh
