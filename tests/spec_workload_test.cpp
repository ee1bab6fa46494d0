// Workloads, solutions, traces and datasets: the shipped workload sets mirror the official axes
// (same UUIDs, counts and values as ../shared/workloads/*.csv), files round-trip, and malformed
// lines give errors naming file, line and field.
#include <cmath>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/safetensors.h"
#include "kh/gen/input_generator.h"
#include "kh/spec/dataset.h"
#include "kh/spec/solution.h"
#include "kh/spec/trace.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

std::string unordered_dump(const Json& j) {
  return nlohmann::json::parse(j.dump()).dump();
}

// Rows of a CSV as column -> value (the official axis files have no quoted commas in the
// columns read here, but quoted fields elsewhere; a small quote-aware splitter suffices).
std::vector<std::map<std::string, std::string>> read_csv(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> header;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (char c : line) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        cells.emplace_back();
      else
        cells.back() += c;
    }
    if (header.empty()) {
      header = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

TEST(Workloads, ShippedSetsMirrorTheOfficialAxes) {
  const Dataset ds = Dataset::open(test::source_dir());
  ASSERT_EQ(ds.definitions().size(), 5u);
  for (const auto& [name, def] : ds.definitions()) {
    SCOPED_TRACE(name);
    const auto rows = read_csv(test::shared_dir() / "workloads" / (name + ".csv"));
    const auto workloads = ds.workloads(name);
    ASSERT_EQ(workloads.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(workloads[i].uuid, rows[i].at("uuid"));
      for (const auto& [axis, value] : workloads[i].axes)
        EXPECT_EQ(std::to_string(value), rows[i].at(axis)) << workloads[i].uuid << " " << axis;
      const AxisValues axes = resolve_axes(def, workloads[i], "test");
      for (const auto& a : def.axes) EXPECT_TRUE(axes.count(a.name)) << a.name;
    }
  }
}

TEST(Workloads, FileRoundTrips) {
  test::ScopedTempDir dir;
  const auto src = test::source_dir() /
                   "workloads/dsa_paged/dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64.jsonl";
  const auto records = load_workload_file(src);
  save_workload_file(dir.path() / "x.jsonl", records);
  std::ifstream a(src), b(dir.path() / "x.jsonl");
  std::stringstream sa, sb;
  sa << a.rdbuf();
  sb << b.rdbuf();
  EXPECT_EQ(sa.str(), sb.str());
  EXPECT_EQ(records[0].workload.hints.at("pattern"), "page_span");
}

std::string workload_error(const std::string& line) {
  test::ScopedTempDir dir;
  test::write_file(
      dir.path() / "definitions/op/vadd.json",
      R"({"name":"vadd","op_type":"op","axes":{"N":{"type":"var"},"D":{"type":"const","value":4}},
  "inputs":{"x":{"shape":["N","D"],"dtype":"bfloat16"},"alpha":{"shape":null,"dtype":"float32"}},
  "outputs":{"y":{"shape":["N","D"],"dtype":"bfloat16"}},"reference":"def run(x, alpha):\n  return x\n"})");
  const std::string good =
      R"({"definition":"vadd","solution":null,"evaluation":null,"workload":{"uuid":"u1","axes":{"N":3},"inputs":{"alpha":{"type":"scalar","value":0.5}}}})";
  test::write_file(dir.path() / "workloads/op/vadd.jsonl", good + "\n" + line + "\n");
  try {
    Dataset::open(dir.path());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Workloads, MalformedLinesGiveErrorsNamingFileLineAndField) {
  auto line = [](const std::string& workload, const std::string& def = "vadd") {
    return R"({"definition":")" + def + R"(","solution":null,"evaluation":null,"workload":)" +
           workload + "}";
  };
  EXPECT_EQ(workload_error(line(R"({"uuid":"u2","axes":{"N":1},"inputs":{}})")), "no error");
  EXPECT_THAT(workload_error(R"({"definition":"vadd",)"), HasSubstr("vadd.jsonl:2: invalid JSON"));
  EXPECT_THAT(workload_error(line(R"({"uuid":"u2","axes":{},"inputs":{}})")),
              HasSubstr("vadd.jsonl:2: workload u2: no value for var axis 'N'"));
  EXPECT_THAT(workload_error(line(R"({"uuid":"u2","axes":{"N":-1},"inputs":{}})")),
              HasSubstr("vadd.jsonl:2: workload.axes.N: an axis value must be >= 0"));
  EXPECT_THAT(workload_error(line(R"({"uuid":"u2","axes":{"N":1,"Q":2},"inputs":{}})")),
              HasSubstr("axis 'Q' is not an axis of vadd"));
  EXPECT_THAT(workload_error(line(R"({"uuid":"u2","axes":{"N":1,"D":5},"inputs":{}})")),
              HasSubstr("axis 'D' is const 4 in vadd but the workload says 5"));
  EXPECT_THAT(
      workload_error(line(R"({"uuid":"u2","axes":{"N":1},"inputs":{"z":{"type":"random"}}})")),
      HasSubstr("'z' is not an input of vadd"));
  EXPECT_THAT(workload_error(line(
                  R"({"uuid":"u2","axes":{"N":1},"inputs":{"x":{"type":"scalar","value":1}}})")),
              HasSubstr("input 'x' is a tensor of shape [1, 4], not a scalar"));
  EXPECT_THAT(
      workload_error(line(R"({"uuid":"u2","axes":{"N":1},"inputs":{"x":{"type":"blob"}}})")),
      HasSubstr("workload.inputs.x.type: expected \"random\", \"scalar\" or \"safetensors\""));
  EXPECT_THAT(
      workload_error(line(
          R"({"uuid":"u2","axes":{"N":1},"inputs":{"x":{"type":"safetensors","path":"a.safetensors"}}})")),
      HasSubstr("missing required field 'workload.inputs.x.tensor_key'"));
  EXPECT_THAT(workload_error(line(R"({"uuid":"u1","axes":{"N":1},"inputs":{}})")),
              HasSubstr("duplicate workload uuid u1"));
  EXPECT_THAT(workload_error(line(R"({"uuid":"u2","axes":{"N":1},"inputs":{}})", "vsub")),
              HasSubstr("names unknown definition 'vsub'"));
}

TEST(Dataset, RejectsDuplicateDefinitionNames) {
  test::ScopedTempDir dir;
  const std::string def =
      read_text_file(test::source_dir() / "definitions/gdn/gdn_decode_qk4_v8_d128_k_last.json");
  test::write_file(dir.path() / "definitions/a/x.json", def);
  test::write_file(dir.path() / "definitions/b/y.json", def);
  try {
    Dataset::open(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is already defined in"));
  }
}

TEST(Solution, ParsesAndValidatesEntryAndSources) {
  const std::string good = R"({"name":"s","definition":"vadd","author":"me",
    "spec":{"language":"cuda","target_hardware":["NVIDIA_H200"],"entry_point":"kernel.cu::vadd","dependencies":[],
            "destination_passing_style":true,"binding":"tvm-ffi"},
    "sources":[{"path":"kernel.cu","content":"// code"}]})";
  const Json j = parse_json(good, "sol.json");
  const Solution s = Solution::from_json(JsonCursor(j, "sol.json"));
  EXPECT_EQ(s.spec.entry_point.file, "kernel.cu");
  EXPECT_EQ(s.spec.entry_point.symbol, "vadd");
  EXPECT_EQ(unordered_dump(s.to_json()), unordered_dump(j));

  auto error = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    try {
      const Json bad = parse_json(t, "sol.json");
      Solution::from_json(JsonCursor(bad, "sol.json"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("kernel.cu::vadd", "kernel.cu:vadd"),
              HasSubstr("must have the form \"file::symbol\""));
  EXPECT_THAT(error("kernel.cu::vadd", "main.cu::vadd"),
              HasSubstr("entry file \"main.cu\" is not among the sources"));
  EXPECT_THAT(error(R"("path":"kernel.cu")", R"("path":"../kernel.cu")"),
              HasSubstr("must not contain \"..\""));
  EXPECT_THAT(error(R"("language":"cuda")", R"("language":"fortran")"),
              HasSubstr("spec.language: unknown language"));
}

TEST(Trace, RoundTripsWithInfinityAndEnforcesPresenceRules) {
  const std::string text =
      R"({"definition":"vadd","workload":{"uuid":"u","axes":{"N":2},"inputs":{}},
    "solution":"s","evaluation":{"status":"INCORRECT_NUMERICAL","environment":{"hardware":"NVIDIA H200","libs":{"torch":"2.11"}},
    "timestamp":"2026-11-29T12:00:00","log":"",
    "correctness":{"max_relative_error":"Infinity","max_absolute_error":"NaN","extra":null}}})";
  const Json j = parse_json(text, "t.jsonl:1");
  const Trace t = Trace::from_json(JsonCursor(j, "t.jsonl:1"));
  ASSERT_TRUE(t.evaluation);
  EXPECT_EQ(t.evaluation->status, EvalStatus::kIncorrectNumerical);
  EXPECT_TRUE(std::isinf(t.evaluation->correctness->max_relative_error));
  EXPECT_TRUE(std::isnan(t.evaluation->correctness->max_absolute_error));
  EXPECT_EQ(t.to_json()["evaluation"]["correctness"]["max_relative_error"], "Infinity");
  EXPECT_EQ(Trace::from_json(JsonCursor(t.to_json(), "again")).to_json().dump(),
            t.to_json().dump());

  std::string passed = text;
  passed.replace(passed.find("INCORRECT_NUMERICAL"), 19, "PASSED");
  const Json pj = parse_json(passed, "t.jsonl:2");
  EXPECT_THROW(Trace::from_json(JsonCursor(pj, "t.jsonl:2")), Error);  // PASSED needs performance
}

}  // namespace
}  // namespace kh

namespace kh {
namespace {

// A dataset in the official layout, with a safetensors-backed input and a trace: kh reads it the
// way it reads its own shipped data.
TEST(Dataset, ReadsTheOfficialLayoutWithBlobsAndTraces) {
  test::ScopedTempDir dir;
  const Definition def = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  save_definition(def, dir.path() / "definitions" / def.op_type / (def.name + ".json"));
  const std::string uuid = "0000-blob";
  const auto blob = workload_blob_path(def, uuid);
  EXPECT_EQ(blob.string(),
            "blob/workloads/gdn/" + def.name + "/" + def.name + "_0000-blob.safetensors");
  HostTensor state(DType::kFloat32, {2, 8, 128, 128});
  for (std::int64_t i = 0; i < state.numel(); i += 997) state.set(i, 0.25 * (i % 5));
  write_safetensors(dir.path() / blob, {{"state", &state}});

  WorkloadRecord r;
  r.definition = def.name;
  r.workload = Workload::from_json(JsonCursor(
      parse_json(
          R"({"uuid":"0000-blob","axes":{"batch_size":2},"inputs":{"state":{"type":"safetensors","path":")" +
              blob.string() + R"(","tensor_key":"state"},"scale":{"type":"scalar","value":0}}})",
          "w"),
      "w"));
  save_workload_file(dir.path() / "workloads" / def.op_type / (def.name + ".jsonl"), {r});
  Trace t{def.name, r.workload, "sol", std::nullopt};
  test::write_file(dir.path() / trace_file_path(def, "me"), t.to_json().dump() + "\n");

  const Dataset ds = Dataset::open(dir.path());
  ASSERT_EQ(ds.traces().size(), 1u);
  EXPECT_EQ(ds.traces()[0].solution, "sol");
  InputGenerator gen(ds.definition(def.name), ds.workloads(def.name)[0], ds.root());
  const InputSet in = gen.generate(0);
  EXPECT_TRUE(in.at("state").bytes_equal(state));
  EXPECT_EQ(in.at("scale").get(0), 0.0);

  HostTensor wrong(DType::kFloat32, {1, 8, 128, 128});
  write_safetensors(dir.path() / blob, {{"state", &wrong}});
  try {
    gen.generate(0);
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("tensor 'state' for input 'state' of workload 0000-blob is "
                  "float32 [1, 8, 128, 128], the definition needs float32 [2, 8, 128, 128]"));
  }
}

}  // namespace
}  // namespace kh
