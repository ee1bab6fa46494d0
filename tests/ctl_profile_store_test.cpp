// Profiles in the store (schema version 4), end to end through the real binary and no GPU: a
// profile folder made on a GPU machine (a committed kh profile of GDN decode on an H200) is
// recorded with kh profile --record, listed with --list, travels in a bundle, and is what kh round
// start --profile latest reads the state from; a folder for another workload is refused, naming
// the file and the field.
#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "kh/ctl/round_manifest.h"
#include "kh/store/artifact_store.h"
#include "test_support.h"

namespace kh {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

class ProfileStore : public ::testing::Test {
 protected:
  // The H200 profile of GDN decode at batch 64 (bench/results), for the cpp test candidate.
  fs::path recorded() const {
    return test::source_dir() / "bench/results/2026-11-30_kh_profile_h200/gdn_decode_b64";
  }
  std::string workload() const {
    return read_json_file(recorded() / "profile.json").at("workload").get<std::string>();
  }
  std::string candidate() const {
    return (test::source_dir() / "tests/candidates/gdn_decode_cpp").string();
  }
  test::CommandResult kh(const std::string& args, const std::string& store = "") const {
    return test::run_command(fmt::format(
        "env KH_MEMORY_DIR= {} {} --store {}", KH_BINARY, args,
        store.empty() ? (dir_.path() / "store").string() : store));
  }
  test::CommandResult record(const fs::path& folder, const std::string& w) const {
    return kh(fmt::format("profile {} -w {} --record {} --root {} --cache {} --json", candidate(), w,
                          folder.string(), test::source_dir().string(),
                          (dir_.path() / "cache").string()));
  }
  test::ScopedTempDir dir_;
};

TEST_F(ProfileStore, ARecordedProfileIsListedAndStartsARound) {
  const auto r = record(recorded(), workload());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string id = parse_json(r.out, "kh profile --record").at("profile").get<std::string>();
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(record(recorded(), workload()).status, 0) << "recording the same files again";

  const auto listed = kh(fmt::format("profile --list -d {} --json", kDecode));
  ASSERT_EQ(listed.status, 0) << listed.err;
  const Json rows = parse_json(listed.out, "kh profile --list");
  ASSERT_EQ(rows.size(), 1u) << "the same profile twice is one row";
  EXPECT_EQ(rows[0]["id"], id);
  EXPECT_EQ(rows[0]["workload"], workload());
  EXPECT_EQ(rows[0]["gpu"], "NVIDIA H200");
  EXPECT_EQ(rows[0]["bottleneck"], "balanced");
  EXPECT_TRUE(rows[0]["has_ncu"].get<bool>());
  EXPECT_EQ(rows[0]["candidate_name"], "gdn_decode_cpp");
  const auto text = kh(fmt::format("profile --list -d {}", kDecode));
  EXPECT_THAT(text.out, HasSubstr(id.substr(0, 12)));
  EXPECT_THAT(text.out, HasSubstr("balanced@void row_tiles_kernel<4, 4, 1>"));

  // The round's state is the stored profile's.
  const fs::path rounds = dir_.path() / "rounds";
  const auto started =
      kh(fmt::format("round start {} --profile latest --rounds-dir {} --root {} --json", kDecode,
                     rounds.string(), test::source_dir().string()));
  ASSERT_EQ(started.status, 0) << started.err;
  const Json m = read_json_file(ctl::round_dir(rounds, kDecode, 1) / "manifest.json");
  EXPECT_EQ(m["signature"], "balanced@void row_tiles_kernel<4, 4, 1>");
  EXPECT_EQ(m["state"]["state"]["bottleneck"], "balanced");
  const auto both = kh(fmt::format("round start {} --profile latest --state x.json --rounds-dir {} "
                                   "--root {}",
                                   kDecode, (dir_.path() / "r2").string(),
                                   test::source_dir().string()));
  EXPECT_NE(both.status, 0);
  EXPECT_THAT(both.err, HasSubstr("give --state or --profile, not both"));
  const auto none = kh(fmt::format("round start {} --profile latest --rounds-dir {} --root {}",
                                   kDecode, (dir_.path() / "r3").string(),
                                   test::source_dir().string()),
                       (dir_.path() / "empty").string());
  EXPECT_NE(none.status, 0);
  EXPECT_THAT(none.err, HasSubstr("the store has no profile of " + kDecode));
}

TEST_F(ProfileStore, ProfilesTravelInBundlesWithTheirFiles) {
  ASSERT_EQ(record(recorded(), workload()).status, 0);
  const fs::path bundle = dir_.path() / "profiles.khb";
  ASSERT_EQ(kh("store export -o " + bundle.string()).status, 0);
  const std::string home = (dir_.path() / "home").string();
  const auto imported = kh("store import " + bundle.string(), home);
  ASSERT_EQ(imported.status, 0) << imported.err;
  ArtifactStore store(StoreLocation{home});
  const auto profiles = store.profiles(kDecode);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(read_json_file(recorded() / "profile.json").at("state"),
            parse_json(store.blob(profiles[0].profile_blob), "blob").at("state"));
  EXPECT_EQ(store.blob(profiles[0].ncu_blob), read_text_file(recorded() / "ncu.csv"));
}

TEST_F(ProfileStore, AFolderOfAnotherWorkloadIsRefused) {
  const auto r = record(recorded(), "0");  // workload 0 of the dataset is not batch 64
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.err, HasSubstr("profile.json: workload:"));
  EXPECT_THAT(r.err, HasSubstr("-w 0"));
  const auto missing = record(dir_.path() / "nothing", workload());
  EXPECT_NE(missing.status, 0);
  EXPECT_THAT(missing.err, HasSubstr("profile.json"));
  EXPECT_EQ(kh(fmt::format("profile --list -d {} --json", kDecode)).out, "[]\n");
}

}  // namespace
}  // namespace kh
