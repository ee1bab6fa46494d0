// kh sweep end to end on the cpu backend, through the real kh binary: interleaving of two
// candidates, results in the store, kill -9 and --resume recording every workload exactly once,
// --retry-failed with flaky accounting, and the queries and report over the result.
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "kh/core/json_io.h"
#include "kh/spec/dataset.h"
#include "kh/store/artifact_store.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

class SweepCli : public ::testing::Test {
 protected:
  // The first `count` shipped decode workloads (batch 1: cheap on the cpu backend).
  fs::path workloads_file(std::size_t count) {
    const Dataset ds = Dataset::open(test::source_dir());
    std::vector<WorkloadRecord> records;
    for (const auto& w : ds.workloads(kDecode)) {
      if (records.size() == count) break;
      records.push_back({kDecode, w});
    }
    const fs::path path = dir_.path() / fmt::format("workloads_{}.jsonl", count);
    save_workload_file(path, records);
    return path;
  }

  std::string kh(const std::string& args) const {
    return fmt::format("env KH_MEMORY_DIR= KH_TEST_FLAKY_DIR={} {} {} --store {}",
                       dir_.path().string(), KH_BINARY, args, store_dir().string());
  }
  std::string sweep_args(const std::string& candidates, const fs::path& workloads) const {
    return fmt::format("sweep {} --root {} --workloads {} --trials 1 --cache {} --logs {}",
                       candidates, test::source_dir().string(), workloads.string(),
                       (test::source_dir() / "build" / "test-build-cache").string(),
                       (dir_.path() / "logs").string());
  }
  fs::path store_dir() const { return dir_.path() / "store"; }
  std::string candidate(const std::string& fault) const {
    return (test::source_dir() / "tests/candidates/gdn_decode_cpp").string() + "@FAULT=" + fault;
  }
  Json json_of(const test::CommandResult& r) const {
    EXPECT_FALSE(r.out.empty()) << r.err;
    return parse_json(r.out, "kh output");
  }

  test::ScopedTempDir dir_;
};

TEST_F(SweepCli, TwoCandidatesAreInterleavedAndCompared) {
  const fs::path workloads = workloads_file(4);
  const auto r = test::run_command(
      kh(sweep_args(candidate("none") + " builtin:cpu_reference", workloads) + " --json"));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const Json out = json_of(r);
  EXPECT_EQ(out.at("items"), 8);
  EXPECT_EQ(out.at("passed"), 8);
  EXPECT_TRUE(out.at("finished").get<bool>());

  ArtifactStore store(StoreLocation{store_dir()});
  const auto items = store.sweep_items(out.at("sweep").get<std::string>());
  ASSERT_EQ(items.size(), 8u);
  // Workload-major, and the candidate going first alternates.
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i].workload, items[i / 2 * 2].workload);
    EXPECT_NE(items[i].candidate, items[i ^ 1].candidate);
  }
  EXPECT_NE(items[0].candidate, items[2].candidate);
  // The built candidate is kept with its sources and a record of its build.
  const auto built = store.find_candidates("gdn_decode_cpp");
  ASSERT_EQ(built.size(), 1u);
  EXPECT_FALSE(built[0].sources.empty());
  ASSERT_FALSE(store.builds(built[0].hash).empty());
  EXPECT_TRUE(store.builds(built[0].hash)[0].ok);

  const auto show = test::run_command(
      kh("show builtin:cpu_reference --json --root " + test::source_dir().string()));
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(json_of(show).at("summary").at("passed"), 4);

  const auto compare =
      test::run_command(kh("compare gdn_decode_cpp builtin:cpu_reference --json "
                           "--root " +
                           test::source_dir().string()));
  ASSERT_EQ(compare.status, 0) << compare.err;
  EXPECT_EQ(json_of(compare).at("compared"), 0);  // cpu backend: nothing timed

  const fs::path report_dir = dir_.path() / "report";
  const auto report = test::run_command(kh(fmt::format(
      "report {} --out {} --root {}", kDecode, report_dir.string(), test::source_dir().string())));
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string md = read_text_file(report_dir / "report.md");
  EXPECT_THAT(md, HasSubstr("gdn_decode_cpp"));
  EXPECT_THAT(md, HasSubstr("builtin:cpu_reference"));
  EXPECT_THAT(md, HasSubstr("batch_size"));

  const auto history = test::run_command(kh("history --json"));
  ASSERT_EQ(history.status, 0) << history.err;
  EXPECT_EQ(json_of(history).size(), 2u);
}

TEST_F(SweepCli, KilledSweepResumesAndRecordsEveryWorkloadOnce) {
  constexpr int kItems = 24;
  const fs::path workloads = workloads_file(kItems);
  const std::string command = "exec " + kh(sweep_args(candidate("none"), workloads));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);  // its own group: the kill takes its workers too
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  // Kill -9 once some, but not all, results are in.
  int recorded = 0;
  for (int wait_ms = 0; wait_ms < 60'000 && recorded < 3; wait_ms += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!fs::exists(store_dir() / "store.db")) continue;
    try {
      ArtifactStore store(StoreLocation{store_dir()});
      for (const auto& s : store.sweeps())
        recorded = static_cast<int>(store.evaluations_of_sweep(s.id).size());
    } catch (const std::exception&) {
    }
  }
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_GE(recorded, 3);
  ASSERT_LT(recorded, kItems) << "the sweep finished before it could be killed";

  const auto r =
      test::run_command(kh(sweep_args(candidate("none"), workloads) + " --resume --json"));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const Json out = json_of(r);
  EXPECT_TRUE(out.at("continued").get<bool>());
  EXPECT_GE(out.at("already_done").get<int>(), recorded);
  EXPECT_EQ(out.at("already_done").get<int>() + out.at("ran").get<int>(), kItems);

  ArtifactStore store(StoreLocation{store_dir()});
  const auto evaluations = store.evaluations_of_sweep(out.at("sweep").get<std::string>());
  std::map<std::string, int> per_workload;
  for (const auto& e : evaluations) ++per_workload[e.workload];
  EXPECT_EQ(per_workload.size(), static_cast<std::size_t>(kItems));
  for (const auto& [uuid, n] : per_workload) EXPECT_EQ(n, 1) << uuid;
  EXPECT_EQ(store.sweeps().size(), 1u);
}

TEST_F(SweepCli, RetryFailedRerunsOnlyFailuresAndFlagsAFlakyPass) {
  const fs::path workloads = workloads_file(3);
  // flaky_once crashes on its first call in this test's folder, then passes.
  const auto first =
      test::run_command(kh(sweep_args(candidate("flaky_once"), workloads) + " --json"));
  EXPECT_EQ(first.status, 3) << first.err;
  const Json a = json_of(first);
  EXPECT_EQ(a.at("failed"), 1);
  EXPECT_EQ(a.at("passed"), 2);

  const auto retry = test::run_command(
      kh(sweep_args(candidate("flaky_once"), workloads) + " --retry-failed --json"));
  ASSERT_EQ(retry.status, 0) << retry.err;
  const Json b = json_of(retry);
  EXPECT_EQ(b.at("sweep"), a.at("sweep"));
  EXPECT_EQ(b.at("ran"), 1);
  EXPECT_EQ(b.at("passed"), 3);
  EXPECT_EQ(b.at("flaky"), 1);

  ArtifactStore store(StoreLocation{store_dir()});
  int retried = 0;
  for (const auto& item : store.sweep_items(b.at("sweep").get<std::string>())) {
    if (item.attempts == 2) {
      ++retried;
      EXPECT_TRUE(item.flaky);
    } else {
      EXPECT_EQ(item.attempts, 1);
      EXPECT_FALSE(item.flaky);
    }
  }
  EXPECT_EQ(retried, 1);
  const auto show =
      test::run_command(kh("show gdn_decode_cpp --json --root " + test::source_dir().string()));
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(json_of(show).at("summary").at("flaky"), 1);
}

// --timing wall on the cpu backend: every passed item is stored timed, with the host's
// environment and no floor.
TEST_F(SweepCli, WallTimingIsStoredWithTheHostEnvironmentAndNoFloor) {
  const fs::path workloads = workloads_file(2);
  const auto r =
      test::run_command(kh(sweep_args("builtin:cpu_reference --definition " + kDecode, workloads) +
                           " --timing wall --warmup 0 --iterations 3 --timing-trials 1 --json"));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const Json out = json_of(r);
  EXPECT_EQ(out.at("passed"), 2);

  ArtifactStore store(StoreLocation{store_dir()});
  const auto evaluations = store.evaluations_of_sweep(out.at("sweep").get<std::string>());
  ASSERT_EQ(evaluations.size(), 2u);
  for (const auto& e : evaluations) {
    EXPECT_EQ(e.timing_method, "wall");
    ASSERT_TRUE(e.summary.has_value());
    EXPECT_GT(e.summary->latency, 0);
    EXPECT_EQ(e.summary->n, 3);
    EXPECT_FALSE(e.floor_seconds.has_value());
    const auto env = store.environment(e.environment);
    ASSERT_TRUE(env.has_value());
    EXPECT_EQ(env->environment.at("gpu"), "cpu");
  }
}

TEST_F(SweepCli, ResumeOfAFinishedPlanStartsANewSweepAndBadInputIsNamed) {
  const fs::path workloads = workloads_file(1);
  ASSERT_EQ(test::run_command(kh(sweep_args(candidate("none"), workloads))).status, 0);
  const auto again =
      test::run_command(kh(sweep_args(candidate("none"), workloads) + " --resume --json"));
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_FALSE(json_of(again).at("continued").get<bool>());

  const auto bad =
      test::run_command(kh(sweep_args(candidate("none"), dir_.path() / "missing.jsonl")));
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.err, HasSubstr("missing.jsonl"));
  const auto cuda = test::run_command(
      "CUDA_VISIBLE_DEVICES= " + kh(sweep_args(candidate("none"), workloads) + " --backend cuda"));
  EXPECT_NE(cuda.status, 0);
}

}  // namespace
}  // namespace kh
