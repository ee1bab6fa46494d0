// The artifact store: every record type reads back as it was put, puts are idempotent, candidates
// are found by name and hash prefix, sweeps by plan key, sweep items merge by the furthest copy,
// record_attempt counts attempts and flakiness, and sample summaries match hand-computed values.
#include <cmath>
#include <limits>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/build/candidate.h"
#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/store/artifact_store.h"
#include "kh/store/sqlite_db.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

class Store : public ::testing::Test {
 protected:
  Store() : store(StoreLocation{dir.path() / "kh"}) {}

  CandidateRecord candidate(const std::string& name, const std::string& created_at,
                            const std::string& source = "int x;\n") {
    CandidateRecord c;
    c.name = name;
    c.definition = "def_a";
    c.params = {{"BLOCK", "128"}, {"UNROLL", "true"}};
    c.manifest_blob = store.put_blob("[solution]\nname = \"" + name + "\"\n");
    c.sources = {{"kernel.cu", store.put_blob(source)}, {"common.cuh", store.put_blob("//h\n")}};
    c.hash = sha256_hex(name + source + created_at);
    c.created_at = created_at;
    store.put_candidate(c);
    return c;
  }

  EvaluationRecord evaluation(const CandidateRecord& c, const std::string& workload,
                              const std::string& status, const std::string& created_at) {
    EvaluationRecord e;
    e.candidate = c.hash;
    e.definition = c.definition;
    e.workload = workload;
    e.status = status;
    e.max_absolute_error = 0.125;
    e.max_relative_error = std::numeric_limits<double>::infinity();
    e.matched_ratio = std::nan("");
    e.message = status == "PASSED" ? "" : "mismatch at [3]";
    e.log_tail = "line one\nline \xff two\n";  // invalid UTF-8, as compiler logs can be
    e.trials = 3;
    e.nondeterministic = true;
    e.options = {{"backend", "cuda"}, {"official", true}, {"seed", 7}};
    e.timing_method = "cupti";
    e.summary = SampleSummary{1.5e-5, 1.4e-5, 1.6e-5, 2e-5, 1e-5, 3e-5, 6, 1};
    e.samples = {{"seconds", {{1e-5, 2e-5, 1.4e-5}, {1.2e-5, 3e-5, 1.3e-5}}},
                 {"sm_clock_mhz", {{1980, 1980, 1965}, {1980, 1980, 1980}}},
                 {"throttle_reasons", {{0, 0, 4}, {0, 0, 0}}}};
    e.cost = {{"flops", 1024.0}, {"bytes", 4096}};
    e.floor_seconds = 1e-6;
    e.fraction_of_floor = 1.0 / 15;
    e.reference_latency = 2.5e-5;
    e.reference_label = "flashinfer";
    e.seconds = 0.75;
    e.created_at = created_at;
    return e;
  }

  SweepRecord sweep(const std::string& id, const std::string& plan, const std::string& created) {
    SweepRecord s;
    s.id = id;
    s.plan_key = plan;
    s.definition = "def_a";
    s.candidates = {"c2", "c1"};
    s.options = {{"trials", 3}};
    s.created_at = created;
    store.put_sweep(s);
    return s;
  }

  std::int64_t count(const std::string& table) {
    return store.db().query_int("SELECT count(*) FROM " + table);
  }

  test::ScopedTempDir dir;
  ArtifactStore store;
};

TEST_F(Store, BlobsAreContentAddressedAndStoredOnce) {
  const std::string h = store.put_blob("hello");
  EXPECT_EQ(h, sha256_hex("hello"));
  EXPECT_EQ(store.put_blob("hello"), h);
  EXPECT_EQ(store.blob(h), "hello");
  EXPECT_TRUE(store.has_blob(h));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "kh/blobs" / h.substr(0, 2) / h.substr(2)));
  EXPECT_EQ(store.blob(store.put_blob("")), "");
  EXPECT_EQ(count("blobs"), 2);
  const std::string absent = sha256_hex("absent");
  EXPECT_FALSE(store.has_blob(absent));
  EXPECT_THROW(store.blob(absent), Error);
  EXPECT_THROW(store.blob("not-a-hash"), Error);
}

TEST_F(Store, DefinitionsWorkloadsCandidatesRoundTrip) {
  const Json def = {{"name", "def_a"}, {"axes", {{"n", 4}}}};
  store.put_definition("def_a", def);
  store.put_workload("def_a", "uuid-1", {{"uuid", "uuid-1"}, {"axes", {{"m", 8}}}});
  EXPECT_EQ(*store.definition_json("def_a"), def);
  EXPECT_EQ(store.workload_json("uuid-1")->at("axes").at("m"), 8);
  EXPECT_FALSE(store.workload_json("uuid-2"));

  CandidateRecord c = candidate("fast", "2026-01-01T00:00:00.000Z");
  c.parent = "";
  const auto back = store.candidate(c.hash);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, "fast");
  EXPECT_EQ(back->definition, "def_a");
  EXPECT_EQ(back->params, c.params);
  EXPECT_EQ(back->sources, c.sources);
  EXPECT_EQ(back->manifest_blob, c.manifest_blob);
  EXPECT_EQ(back->created_at, c.created_at);
  EXPECT_EQ(store.blob(back->sources.at("kernel.cu")), "int x;\n");
  EXPECT_FALSE(store.candidate("0000"));
}

TEST_F(Store, BuildsEnvironmentsCeilingsRoundTrip) {
  const CandidateRecord c = candidate("fast", "2026-01-01T00:00:00.000Z");
  BuildRecord b;
  b.candidate = c.hash;
  b.key = "key1";
  b.ok = true;
  b.cached = false;
  b.log_blob = store.put_blob("warning: x\n");
  b.seconds = 2.5;
  b.created_at = "2026-01-02T00:00:00.000Z";
  store.put_build(b);
  store.put_build(b);  // same id: ignored
  const auto builds = store.builds(c.hash);
  ASSERT_EQ(builds.size(), 1u);
  EXPECT_EQ(builds[0].id, sha256_hex(c.hash + "\nkey1\n" + b.created_at));
  EXPECT_TRUE(builds[0].ok);
  EXPECT_FALSE(builds[0].cached);
  EXPECT_EQ(builds[0].log_blob, b.log_blob);
  EXPECT_EQ(builds[0].seconds, 2.5);

  const Json env = {{"gpu", "NVIDIA H200"}, {"driver", "560.1"}};
  store.put_environment({"", env});
  const auto e = store.environment(sha256_hex(env.dump()));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->environment, env);

  store.put_ceilings({"", "H200", {{"dram_bytes_per_second", 4.0e12}}, "2026-01-01T00:00:00.000Z"});
  store.put_ceilings({"", "H200", {{"dram_bytes_per_second", 4.1e12}}, "2026-02-01T00:00:00.000Z"});
  const auto latest = store.latest_ceilings("H200");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->ceilings.at("dram_bytes_per_second"), 4.1e12);
  EXPECT_EQ(latest->created_at, "2026-02-01T00:00:00.000Z");
  EXPECT_FALSE(store.latest_ceilings("B200"));
}

TEST_F(Store, EvaluationsRoundTripWithComputedId) {
  const CandidateRecord c = candidate("fast", "2026-01-01T00:00:00.000Z");
  store.put_environment({"env1", {{"gpu", "H200"}}});
  EvaluationRecord e = evaluation(c, "w1", "PASSED", "2026-01-03T00:00:00.000Z");
  e.environment = "env1";
  store.put_evaluation(e);
  store.put_evaluation(e);  // idempotent
  EvaluationRecord untimed = evaluation(c, "w2", "RUNTIME_ERROR", "2026-01-04T00:00:00.000Z");
  untimed.summary.reset();
  untimed.samples = nullptr;
  untimed.floor_seconds.reset();
  untimed.reference_latency.reset();
  store.put_evaluation(untimed);

  const auto all = store.evaluations_of_candidate(c.hash);
  ASSERT_EQ(all.size(), 2u);
  const EvaluationRecord& r = all[0];
  EXPECT_EQ(r.id.size(), 64u);
  EXPECT_EQ(r.id, evaluation_id(r)) << "the id must recompute from the stored record";
  EXPECT_EQ(r.id, evaluation_id(e));
  EXPECT_EQ(r.workload, "w1");
  EXPECT_EQ(r.status, "PASSED");
  EXPECT_EQ(r.max_absolute_error, 0.125);
  EXPECT_TRUE(std::isinf(r.max_relative_error));
  EXPECT_TRUE(std::isnan(r.matched_ratio));
  EXPECT_EQ(r.log_tail, "line one\nline \xef\xbf\xbd two\n");
  EXPECT_EQ(r.trials, 3);
  EXPECT_TRUE(r.nondeterministic);
  EXPECT_EQ(r.options, e.options);
  EXPECT_EQ(r.timing_method, "cupti");
  ASSERT_TRUE(r.summary);
  EXPECT_EQ(r.summary->latency, 1.5e-5);
  EXPECT_EQ(r.summary->p95, 2e-5);
  EXPECT_EQ(r.summary->n, 6);
  EXPECT_EQ(r.summary->throttled, 1);
  EXPECT_EQ(r.samples, e.samples);
  EXPECT_EQ(r.cost, e.cost);
  EXPECT_EQ(r.floor_seconds, 1e-6);
  EXPECT_EQ(r.fraction_of_floor, 1.0 / 15);
  EXPECT_EQ(r.environment, "env1");
  EXPECT_EQ(r.reference_latency, 2.5e-5);
  EXPECT_EQ(r.reference_label, "flashinfer");
  EXPECT_EQ(r.seconds, 0.75);
  EXPECT_EQ(r.created_at, e.created_at);

  const EvaluationRecord& u = all[1];
  EXPECT_FALSE(u.summary);
  EXPECT_TRUE(u.samples.is_null());
  EXPECT_FALSE(u.floor_seconds);
  EXPECT_FALSE(u.reference_latency);
  EXPECT_EQ(u.environment, "");
  EXPECT_EQ(u.id, evaluation_id(u));
  EXPECT_EQ(count("evaluations"), 2);
}

TEST_F(Store, PutsAreIdempotentAndKeepTheFirstRow) {
  CandidateRecord c = candidate("fast", "2026-01-01T00:00:00.000Z");
  CandidateRecord again = c;
  again.created_at = "2026-05-05T00:00:00.000Z";
  again.name = "renamed";
  store.put_candidate(again);
  EXPECT_EQ(store.candidate(c.hash)->created_at, c.created_at);
  EXPECT_EQ(store.candidate(c.hash)->name, "fast");
  store.put_definition("def_a", {{"v", 1}});
  store.put_definition("def_a", {{"v", 2}});
  EXPECT_EQ(store.definition_json("def_a")->at("v"), 1);
  sweep("s1", "plan", "2026-01-01T00:00:00.000Z");
  sweep("s1", "plan", "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(count("candidates"), 1);
  EXPECT_EQ(count("candidate_sources"), 2);
  EXPECT_EQ(count("definitions"), 1);
  EXPECT_EQ(count("sweeps"), 1);
}

TEST_F(Store, FindsCandidatesByNameAndHashPrefix) {
  const auto old = candidate("fast", "2026-01-01T00:00:00.000Z", "v1");
  const auto newer = candidate("fast", "2026-02-01T00:00:00.000Z", "v2");
  const auto other = candidate("slow", "2026-03-01T00:00:00.000Z", "v3");
  auto found = store.find_candidates("fast");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].hash, newer.hash);  // newest first
  EXPECT_EQ(found[1].hash, old.hash);
  found = store.find_candidates(other.hash.substr(0, 6));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "slow");
  EXPECT_EQ(store.find_candidates(other.hash).size(), 1u);
  EXPECT_TRUE(store.find_candidates(other.hash.substr(0, 5)).empty()) << "too short a prefix";
  EXPECT_TRUE(store.find_candidates("nothing").empty());
  EXPECT_EQ(store.candidates().size(), 3u);
  EXPECT_EQ(store.candidates("def_a")[0].hash, other.hash);
  EXPECT_TRUE(store.candidates("def_b").empty());
}

TEST_F(Store, LatestSweepAndFinishing) {
  sweep("s1", "plan", "2026-01-01T00:00:00.000Z");
  sweep("s2", "plan", "2026-01-02T00:00:00.000Z");
  sweep("s3", "other", "2026-01-03T00:00:00.000Z");
  EXPECT_EQ(store.latest_sweep("plan")->id, "s2");
  EXPECT_FALSE(store.latest_sweep("none"));
  const auto all = store.sweeps();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "s3");
  EXPECT_EQ(all[0].candidates, (std::vector<std::string>{"c2", "c1"}));
  EXPECT_EQ(all[0].options, (Json{{"trials", 3}}));
  EXPECT_EQ(all[0].finished_at, "");
  EXPECT_TRUE(store.sweeps("def_b").empty());
  store.finish_sweep("s2", "2026-01-05T00:00:00.000Z");
  EXPECT_EQ(store.sweep("s2")->finished_at, "2026-01-05T00:00:00.000Z");
  EXPECT_FALSE(store.sweep("s9"));
  EXPECT_THROW(store.finish_sweep("s9", "x"), Error);
}

TEST_F(Store, SweepItemsMergeByTheFurthestCopy) {
  sweep("s1", "plan", "2026-01-01T00:00:00.000Z");
  SweepItem item{"s1", 0, "c1", "w1", SweepItemState::kPending, 0, false, ""};
  store.put_sweep_item(item);
  store.put_sweep_item(SweepItem{"s1", 1, "c2", "w1", SweepItemState::kPending, 0, false, ""});
  auto state = [&] { return store.sweep_items("s1").at(0); };

  SweepItem failed = item;
  failed.state = SweepItemState::kFailed;
  failed.attempts = 1;
  failed.last_evaluation = "e1";
  store.put_sweep_item(failed);
  EXPECT_EQ(state().state, SweepItemState::kFailed);
  store.put_sweep_item(item);  // an older copy does not win
  EXPECT_EQ(state().state, SweepItemState::kFailed);
  EXPECT_EQ(state().attempts, 1);
  SweepItem passed_same = failed;  // equal attempts, both finished: the stored one stays
  passed_same.state = SweepItemState::kPassed;
  store.put_sweep_item(passed_same);
  EXPECT_EQ(state().state, SweepItemState::kFailed);
  SweepItem retried = failed;  // more attempts wins
  retried.state = SweepItemState::kPassed;
  retried.attempts = 2;
  retried.flaky = true;
  retried.last_evaluation = "e2";
  store.put_sweep_item(retried);
  EXPECT_EQ(state().state, SweepItemState::kPassed);
  EXPECT_EQ(state().attempts, 2);
  EXPECT_TRUE(state().flaky);
  EXPECT_EQ(state().last_evaluation, "e2");

  const auto items = store.sweep_items("s1");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].position, 1);
  EXPECT_EQ(items[1].candidate, "c2");
  EXPECT_EQ(sweep_item_state_name(SweepItemState::kFailed), "failed");
  EXPECT_EQ(parse_sweep_item_state("passed"), SweepItemState::kPassed);
  EXPECT_THROW(parse_sweep_item_state("done"), Error);
}

TEST_F(Store, RecordAttemptCountsRetriesAndFlakiness) {
  const CandidateRecord c = candidate("fast", "2026-01-01T00:00:00.000Z");
  sweep("s1", "plan", "2026-01-01T00:00:00.000Z");
  const SweepItem item{"s1", 0, c.hash, "w1", SweepItemState::kPending, 0, false, ""};
  const SweepItem steady{"s1", 1, c.hash, "w2", SweepItemState::kPending, 0, false, ""};
  store.put_sweep_item(item);
  store.put_sweep_item(steady);

  EvaluationRecord fail1 = evaluation(c, "w1", "INCORRECT_NUMERICAL", "2026-01-02T00:00:00.000Z");
  fail1.sweep = "s1";
  store.record_attempt(item, fail1);
  SweepItem now = store.sweep_items("s1").at(0);
  EXPECT_EQ(now.state, SweepItemState::kFailed);
  EXPECT_EQ(now.attempts, 1);
  EXPECT_FALSE(now.flaky);
  EXPECT_EQ(now.last_evaluation, evaluation_id(fail1));

  EvaluationRecord pass2 = evaluation(c, "w1", "PASSED", "2026-01-03T00:00:00.000Z");
  pass2.attempt = 2;  // the sweep passes the item as it read it before the retry
  store.record_attempt(item, pass2);
  now = store.sweep_items("s1").at(0);
  EXPECT_EQ(now.state, SweepItemState::kPassed);
  EXPECT_EQ(now.attempts, 2);
  EXPECT_TRUE(now.flaky);
  const auto evals = store.evaluations_of_sweep("s1");
  ASSERT_EQ(evals.size(), 2u) << "the sweep is filled in from the item";
  EXPECT_EQ(now.last_evaluation, evals[1].id);

  store.record_attempt(steady, evaluation(c, "w2", "PASSED", "2026-01-04T00:00:00.000Z"));
  now = store.sweep_items("s1").at(1);
  EXPECT_EQ(now.state, SweepItemState::kPassed);
  EXPECT_EQ(now.attempts, 1);
  EXPECT_FALSE(now.flaky);

  // The evaluation and the item commit together: a failing insert leaves the item as it was.
  EvaluationRecord orphan = evaluation(c, "w2", "PASSED", "2026-01-05T00:00:00.000Z");
  orphan.candidate = "unknown";
  EXPECT_THROW(store.record_attempt(steady, orphan), Error);
  EXPECT_EQ(store.sweep_items("s1").at(1).attempts, 1);
}

TEST(SummarizeSamples, MatchesHandComputedValues) {
  // Trial medians 2 and 5.5 (even count: mean of the middle two): latency 3.75. Pooled 1..7.
  const SampleSummary s = summarize_samples({{1, 3, 2}, {4, 6, 5, 7}}, 2);
  EXPECT_DOUBLE_EQ(s.latency, 3.75);
  EXPECT_DOUBLE_EQ(s.median, 4);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_DOUBLE_EQ(s.p95, 7);  // nearest rank ceil(0.95 * 7) = 7
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 7);
  EXPECT_EQ(s.n, 7);
  EXPECT_EQ(s.throttled, 2);

  std::vector<double> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i);
  const SampleSummary t = summarize_samples({twenty}, 0);
  EXPECT_DOUBLE_EQ(t.p95, 19);  // rank ceil(0.95 * 20) = 19
  EXPECT_DOUBLE_EQ(t.median, 10.5);
  EXPECT_DOUBLE_EQ(t.latency, 10.5);
  EXPECT_DOUBLE_EQ(t.mean, 10.5);
  EXPECT_EQ(summarize_samples({}, 0).n, 0);
}

TEST(UtcTimestamp, IsIso8601WithMilliseconds) {
  EXPECT_THAT(utc_timestamp(),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\."
                                      "[0-9]{3}Z"));
}

TEST_F(Store, RecordCandidateHashesManifestSourcesAndParams) {
  const auto cdir = dir.path() / "cand";
  test::write_file(cdir / "entry.cpp", "int f() { return VALUE; }\n");
  test::write_file(cdir / "candidate.toml", R"([solution]
name = "tiny"
definition = "def_a"
author = "kh"
[build]
language = "cpp"
sources = ["entry.cpp"]
entry = "entry.cpp::kh_entry"
[params]
VALUE = [1, 7]
)");
  const Candidate loaded = load_candidate(cdir);
  const CandidateRecord a = record_candidate(store, loaded, {{"VALUE", "1"}});
  const CandidateRecord again = record_candidate(store, loaded, {{"VALUE", "1"}});
  const CandidateRecord b = record_candidate(store, loaded, {{"VALUE", "7"}});
  EXPECT_EQ(a.hash, again.hash);
  EXPECT_EQ(a.created_at, again.created_at) << "the first recording's time is kept";
  EXPECT_NE(a.hash, b.hash);
  EXPECT_EQ(a.name, "tiny");
  EXPECT_EQ(a.definition, "def_a");
  EXPECT_EQ(store.blob(a.sources.at("entry.cpp")), "int f() { return VALUE; }\n");
  EXPECT_THAT(store.blob(a.manifest_blob), HasSubstr("name = \"tiny\""));
  test::write_file(cdir / "entry.cpp", "int f() { return VALUE + 1; }\n");
  EXPECT_NE(record_candidate(store, load_candidate(cdir), {{"VALUE", "1"}}).hash, a.hash);
}

}  // namespace
}  // namespace kh
