#include "kh/spec/solution.h"

#include <set>

#include "kh/core/error.h"

namespace kh {

EntryPoint parse_entry_point(const std::string& text, const std::string& where) {
  const auto pos = text.find("::");
  if (pos == std::string::npos || text.find("::", pos + 2) != std::string::npos || pos == 0 ||
      pos + 2 == text.size())
    fail("{}: entry point \"{}\" must have the form \"file::symbol\"", where, text);
  return {text.substr(0, pos), text.substr(pos + 2)};
}

Solution Solution::from_json(const JsonCursor& c) {
  static const std::set<std::string> kLanguages = {"python", "triton", "cpp", "cuda", "tilelang"};
  c.expect_object();
  Solution s;
  s.name = c.at("name").as_string();
  s.definition = c.at("definition").as_string();
  s.author = c.at("author").as_string();
  if (auto d = c.find("description")) s.description = d->as_string();
  const JsonCursor spec = c.at("spec");
  s.spec.language = spec.at("language").as_string();
  if (!kLanguages.count(s.spec.language))
    spec.at("language")
        .fail_here("unknown language \"" + s.spec.language +
                   "\" (python, triton, cpp, cuda, tilelang)");
  if (auto t = spec.find("target_hardware")) {
    t->expect_array();
    for (std::size_t i = 0; i < t->size(); ++i)
      s.spec.target_hardware.push_back(t->at(i).as_string());
  }
  const JsonCursor entry = spec.at("entry_point");
  s.spec.entry_point = parse_entry_point(entry.as_string(), entry.where());
  if (auto d = spec.find("dependencies")) {
    d->expect_array();
    for (std::size_t i = 0; i < d->size(); ++i) s.spec.dependencies.push_back(d->at(i).as_string());
  }
  if (auto d = spec.find("destination_passing_style"))
    s.spec.destination_passing_style = d->as_bool();
  if (auto b = spec.find("binding")) {
    s.spec.binding = b->as_string();
    if (s.spec.binding != "tvm-ffi" && s.spec.binding != "torch")
      b->fail_here("expected \"tvm-ffi\", \"torch\" or null");
  }
  const JsonCursor sources = c.at("sources");
  sources.expect_array();
  std::set<std::string> paths;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const JsonCursor src = sources.at(i);
    SourceFile f{src.at("path").as_string(), src.at("content").as_string()};
    const std::filesystem::path p(f.path);
    if (f.path.empty() || p.is_absolute()) src.at("path").fail_here("must be a relative path");
    for (const auto& part : p)
      if (part == "..") src.at("path").fail_here("must not contain \"..\"");
    if (!paths.insert(f.path).second) src.at("path").fail_here("duplicate source path " + f.path);
    s.sources.push_back(std::move(f));
  }
  if (!paths.count(s.spec.entry_point.file))
    entry.fail_here("entry file \"" + s.spec.entry_point.file + "\" is not among the sources");
  return s;
}

Json Solution::to_json() const {
  Json spec_json = Json::object();
  spec_json["language"] = spec.language;
  spec_json["target_hardware"] = spec.target_hardware;
  spec_json["entry_point"] = spec.entry_point.text();
  spec_json["dependencies"] = spec.dependencies;
  spec_json["destination_passing_style"] = spec.destination_passing_style;
  spec_json["binding"] = spec.binding.empty() ? Json(nullptr) : Json(spec.binding);
  Json src = Json::array();
  for (const auto& f : sources) src.push_back({{"path", f.path}, {"content", f.content}});
  Json j = Json::object();
  j["name"] = name;
  j["definition"] = definition;
  j["author"] = author;
  if (!description.empty()) j["description"] = description;
  j["spec"] = spec_json;
  j["sources"] = src;
  return j;
}

Solution load_solution(const std::filesystem::path& path) {
  const Json doc = read_json_file(path);
  return Solution::from_json(JsonCursor(doc, path.string()));
}

}  // namespace kh
