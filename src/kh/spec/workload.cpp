#include "kh/spec/workload.h"

#include <set>
#include <sstream>

#include "kh/core/error.h"

namespace kh {

const WorkloadInput* Workload::find_input(const std::string& name) const {
  for (const auto& [n, in] : inputs)
    if (n == name) return &in;
  return nullptr;
}

std::int64_t Workload::axis(const std::string& name) const {
  for (const auto& [n, v] : axes)
    if (n == name) return v;
  fail("workload {}: no value for axis '{}'", uuid, name);
}

Workload Workload::from_json(const JsonCursor& c) {
  c.expect_object();
  Workload w;
  w.uuid = c.at("uuid").as_string();
  if (w.uuid.empty()) c.at("uuid").fail_here("must not be empty");
  const JsonCursor axes = c.at("axes");
  axes.expect_object();
  for (const auto& name : axes.keys()) {
    const std::int64_t v = axes.at(name).as_int();
    if (v < 0) axes.at(name).fail_here("an axis value must be >= 0");
    w.axes.emplace_back(name, v);
  }
  const JsonCursor inputs = c.at("inputs");
  inputs.expect_object();
  for (const auto& name : inputs.keys()) {
    const JsonCursor in = inputs.at(name);
    in.expect_object();
    WorkloadInput wi;
    const std::string type = in.at("type").as_string();
    if (type == "random") {
      wi.kind = WorkloadInput::Kind::kRandom;
    } else if (type == "scalar") {
      wi.kind = WorkloadInput::Kind::kScalar;
      const JsonCursor v = in.at("value");
      if (!v.json().is_number() && !v.json().is_boolean())
        v.fail_here("expected a number or bool, got " + json_type_name(v.json()));
      wi.scalar = v.json();
    } else if (type == "safetensors") {
      wi.kind = WorkloadInput::Kind::kSafetensors;
      wi.path = in.at("path").as_string();
      wi.tensor_key = in.at("tensor_key").as_string();
      if (wi.path.empty()) in.at("path").fail_here("must not be empty");
    } else {
      in.at("type").fail_here("expected \"random\", \"scalar\" or \"safetensors\", got \"" + type +
                              "\"");
    }
    w.inputs.emplace_back(name, std::move(wi));
  }
  if (auto h = c.find("kh")) {
    h->expect_object();
    w.hints = h->json();
  }
  return w;
}

Json Workload::to_json() const {
  Json j = Json::object();
  j["uuid"] = uuid;
  Json ax = Json::object();
  for (const auto& [n, v] : axes) ax[n] = v;
  j["axes"] = ax;
  Json in = Json::object();
  for (const auto& [n, wi] : inputs) {
    switch (wi.kind) {
      case WorkloadInput::Kind::kRandom:
        in[n] = {{"type", "random"}};
        break;
      case WorkloadInput::Kind::kScalar:
        in[n] = {{"type", "scalar"}, {"value", wi.scalar}};
        break;
      case WorkloadInput::Kind::kSafetensors:
        in[n] = {{"type", "safetensors"}, {"path", wi.path}, {"tensor_key", wi.tensor_key}};
        break;
    }
  }
  j["inputs"] = in;
  if (!hints.empty()) j["kh"] = hints;
  return j;
}

std::vector<WorkloadRecord> load_workload_file(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  std::vector<WorkloadRecord> out;
  std::istringstream lines(text);
  std::string line;
  std::set<std::string> seen;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string source = path.string() + ":" + std::to_string(number);
    const Json doc = parse_json(line, source);
    const JsonCursor c(doc, source);
    c.expect_object();
    WorkloadRecord r;
    r.definition = c.at("definition").as_string();
    r.workload = Workload::from_json(c.at("workload"));
    if (!seen.insert(r.workload.uuid).second)
      c.at("workload").at("uuid").fail_here("duplicate workload uuid " + r.workload.uuid);
    out.push_back(std::move(r));
  }
  return out;
}

void save_workload_file(const std::filesystem::path& path,
                        const std::vector<WorkloadRecord>& records) {
  std::string text;
  for (const auto& r : records) {
    Json line = Json::object();
    line["definition"] = r.definition;
    line["solution"] = nullptr;
    line["evaluation"] = nullptr;
    line["workload"] = r.workload.to_json();
    text += line.dump() + "\n";
  }
  write_text_file_atomic(path, text);
}

AxisValues resolve_axes(const Definition& def, const Workload& w, const std::string& where) {
  AxisValues values;
  for (const auto& a : def.axes)
    if (a.is_const) values[a.name] = a.value;
  for (const auto& [name, v] : w.axes) {
    const AxisDecl* a = def.find_axis(name);
    if (!a) fail("{}: workload {}: axis '{}' is not an axis of {}", where, w.uuid, name, def.name);
    if (a->is_const) {
      if (v != a->value)
        fail("{}: workload {}: axis '{}' is const {} in {} but the workload says {}", where, w.uuid,
             name, a->value, def.name, v);
      continue;
    }
    values[name] = v;
  }
  for (const auto& a : def.axes)
    if (!values.count(a.name))
      fail("{}: workload {}: no value for var axis '{}' of {}", where, w.uuid, a.name, def.name);
  for (const auto& [name, wi] : w.inputs) {
    const TensorDecl* t = def.find_input(name);
    if (!t) fail("{}: workload {}: '{}' is not an input of {}", where, w.uuid, name, def.name);
    if (wi.kind == WorkloadInput::Kind::kScalar && !t->is_scalar())
      fail("{}: workload {}: input '{}' is a tensor of shape {}, not a scalar", where, w.uuid, name,
           shape_string(def.shape_of(*t, values)));
  }
  return values;
}

}  // namespace kh
