// Several kh processes write one store at once: every row arrives, read-modify-write updates of
// one sweep item are not lost (BEGIN IMMEDIATE queues them), and the database stays intact.
// Children report by exit status only; gtest assertions run in the parent.
#include <cstdio>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/store/artifact_store.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh {
namespace {

constexpr int kWriters = 3;
constexpr int kEvaluationsEach = 200;
constexpr int kAttemptsEach = 30;

EvaluationRecord evaluation(const std::string& candidate, int writer, int i) {
  EvaluationRecord e;
  e.candidate = candidate;
  e.definition = "def";
  e.workload = "w" + std::to_string(i);
  e.status = "PASSED";
  e.options = {{"writer", writer}};
  e.summary = summarize_samples({{1e-5 * (i + 1), 2e-5, 3e-5}}, 0);
  e.samples = {{"seconds", {{1e-5 * (i + 1), 2e-5, 3e-5}}}};
  e.created_at = utc_timestamp();
  e.message = "writer " + std::to_string(writer) + " item " + std::to_string(i);
  return e;
}

// One writer process: opens the (possibly not yet created) store itself.
int write_from_child(const StoreLocation& where, int writer) {
  try {
    ArtifactStore store(where);
    CandidateRecord c;
    c.name = "c" + std::to_string(writer);
    c.definition = "def";
    c.hash = "hash-" + std::to_string(writer);
    c.sources = {{"k.cu", store.put_blob("shared source bytes")}};
    store.put_candidate(c);
    store.put_environment({"env", {{"gpu", "H200"}}});
    SweepRecord sweep;
    sweep.id = "shared-sweep";
    sweep.plan_key = "plan";
    sweep.definition = "def";
    sweep.created_at = "2026-01-01T00:00:00.000Z";
    store.put_sweep(sweep);
    const SweepItem item{"shared-sweep", 0, "hash-0", "w0", SweepItemState::kPending, 0, false, ""};
    store.put_sweep_item(item);
    for (int i = 0; i < kEvaluationsEach; ++i) {
      EvaluationRecord e = evaluation(c.hash, writer, i);
      e.environment = "env";
      store.put_evaluation(e);
      if (i < kAttemptsEach) {
        EvaluationRecord attempt = evaluation(c.hash, writer, i);
        attempt.workload = "w0";
        attempt.status = i % 2 ? "PASSED" : "RUNTIME_ERROR";
        store.record_attempt(item, attempt);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer %d: %s\n", writer, e.what());
    return 1;
  }
}

TEST(StoreConcurrency, ProcessesWritingAtOnceLoseNothing) {
  test::ScopedTempDir dir;
  const StoreLocation where{dir.path() / "store"};
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) _exit(write_from_child(where, w));
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer failed: " << status;
  }

  ArtifactStore store(where);
  EXPECT_EQ(store.db().query_int("SELECT count(*) FROM evaluations"),
            kWriters * (kEvaluationsEach + kAttemptsEach));
  for (int w = 0; w < kWriters; ++w)
    EXPECT_EQ(store.evaluations_of_candidate("hash-" + std::to_string(w)).size(),
              static_cast<std::size_t>(kEvaluationsEach + kAttemptsEach));
  const SweepItem item = store.sweep_items("shared-sweep").at(0);
  EXPECT_EQ(item.attempts, kWriters * kAttemptsEach) << "an attempt was lost";
  EXPECT_EQ(store.db().query_int("SELECT count(*) FROM blobs"), 1);
  Statement check(store.db(), "PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.text(0), "ok");
  EXPECT_EQ(store.db().query_int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
}

}  // namespace
}  // namespace kh
