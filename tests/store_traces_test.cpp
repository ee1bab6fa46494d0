// FlashInfer-Bench traces in and out of the store: an exported trace says which candidate's
// latency it wrote as the reference latency, and importing it back keeps latency, errors and
// that statement; a trace without one is labelled as not stating its reference.
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/spec/dataset.h"
#include "kh/spec/trace.h"
#include "kh/store/trace_exchange.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";

class Traces : public ::testing::Test {
 protected:
  Traces() : store_(StoreLocation{dir_.path() / "a"}) {
    const Dataset ds = Dataset::open(test::source_dir());
    workload_ = ds.workloads(kDecode).at(0);
    store_.put_definition(kDecode, ds.definition(kDecode).to_json());
    store_.put_workload(kDecode, workload_.uuid, workload_.to_json());
    fast_ = candidate("fast");
    slow_ = candidate("slow");
  }
  CandidateRecord candidate(const std::string& name) {
    CandidateRecord c;
    c.hash = std::string(64, name == "fast" ? 'a' : 'b');
    c.name = name;
    c.definition = kDecode;
    c.created_at = utc_timestamp();
    store_.put_candidate(c);
    return c;
  }
  EvaluationRecord timed(const CandidateRecord& c, double latency) {
    EvaluationRecord e;
    e.candidate = c.hash;
    e.definition = kDecode;
    e.workload = workload_.uuid;
    e.status = "PASSED";
    e.max_absolute_error = 1e-3;
    e.max_relative_error = 2e-3;
    e.matched_ratio = 1;
    e.options = {{"backend", "cuda"}};
    e.timing_method = "cupti";
    SampleSummary s;
    s.latency = s.median = s.mean = s.min = s.max = s.p95 = latency;
    s.n = 1;
    e.summary = s;
    e.created_at = utc_timestamp();
    store_.put_evaluation(e);
    return e;
  }

  test::ScopedTempDir dir_;
  ArtifactStore store_;
  Workload workload_;
  CandidateRecord fast_, slow_;
};

TEST_F(Traces, ExportStatesTheTimedReferenceAndImportKeepsIt) {
  const EvaluationRecord fast = timed(fast_, 10e-6);
  const EvaluationRecord slow = timed(slow_, 25e-6);
  TraceExportOptions options;
  options.baseline = slow_;
  options.baseline_evaluations = {slow};
  std::stringstream jsonl;
  ASSERT_EQ(export_traces(store_, {fast}, options, jsonl), 1);

  const Json line = parse_json(jsonl.str(), "exported trace");
  const Trace t = Trace::from_json(JsonCursor(line, "exported trace"));
  ASSERT_TRUE(t.evaluation && t.evaluation->performance);
  EXPECT_EQ(*t.solution, "fast");
  EXPECT_NEAR(t.evaluation->performance->latency_ms, 0.010, 1e-12);
  EXPECT_NEAR(t.evaluation->performance->reference_latency_ms, 0.025, 1e-12);
  EXPECT_NEAR(t.evaluation->performance->speedup_factor, 2.5, 1e-12);
  EXPECT_THAT(t.evaluation->correctness->extra.at("reference_timed").get<std::string>(),
              HasSubstr("slow"));

  ArtifactStore other(StoreLocation{dir_.path() / "b"});
  std::stringstream in(jsonl.str());
  const TraceImportStats stats = import_traces(other, in, "traces.jsonl");
  EXPECT_EQ(stats.lines, 1);
  EXPECT_EQ(stats.evaluations, 1);
  const auto found = other.find_candidates("fast");
  ASSERT_EQ(found.size(), 1u);
  const auto evaluations = other.evaluations_of_candidate(found[0].hash);
  ASSERT_EQ(evaluations.size(), 1u);
  const EvaluationRecord& e = evaluations[0];
  EXPECT_EQ(e.status, "PASSED");
  ASSERT_TRUE(e.summary);
  EXPECT_NEAR(e.summary->latency, 10e-6, 1e-15);
  ASSERT_TRUE(e.reference_latency);
  EXPECT_NEAR(*e.reference_latency, 25e-6, 1e-15);
  EXPECT_THAT(e.reference_label, HasSubstr("slow"));
  EXPECT_NEAR(e.max_relative_error, 2e-3, 1e-15);

  std::stringstream again(jsonl.str());  // importing twice records nothing new
  import_traces(other, again, "traces.jsonl");
  EXPECT_EQ(other.evaluations_of_candidate(found[0].hash).size(), 1u);
}

TEST_F(Traces, AnUnstatedReferenceIsLabelledSoAndWorkloadOnlyLinesAreCounted) {
  std::stringstream jsonl;
  const EvaluationRecord fast = timed(fast_, 10e-6);
  export_traces(store_, {fast}, {}, jsonl);
  Json line = parse_json(jsonl.str(), "trace");
  line["evaluation"]["performance"]["reference_latency_ms"] = 0.05;
  Json bare = line;
  bare["solution"] = nullptr;
  bare["evaluation"] = nullptr;
  std::stringstream in(line.dump() + "\n" + bare.dump() + "\n");
  ArtifactStore other(StoreLocation{dir_.path() / "c"});
  const TraceImportStats stats = import_traces(other, in, "official.jsonl");
  EXPECT_EQ(stats.lines, 2);
  EXPECT_EQ(stats.without_evaluation, 1);
  const auto e = other.evaluations_of_candidate(other.find_candidates("fast").at(0).hash);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_THAT(e[0].reference_label, HasSubstr("not stated"));

  std::stringstream broken("{\"definition\": 5}\n");
  try {
    import_traces(other, broken, "broken.jsonl");
    FAIL() << "a malformed trace was accepted";
  } catch (const std::exception& err) {
    EXPECT_THAT(err.what(), HasSubstr("broken.jsonl:1"));
  }
}

}  // namespace
}  // namespace kh
