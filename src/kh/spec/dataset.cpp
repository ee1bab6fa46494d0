#include "kh/spec/dataset.h"

#include <algorithm>
#include <sstream>

#include "kh/core/error.h"

namespace kh {

std::vector<std::filesystem::path> find_files(const std::filesystem::path& dir,
                                              const std::string& ext) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Dataset Dataset::open(const std::filesystem::path& root) {
  if (!std::filesystem::is_directory(root))
    fail("{}: dataset root is not a directory", root.string());
  Dataset d;
  d.root_ = root;
  for (const auto& file : find_files(root / "definitions", ".json")) {
    Definition def = load_definition(file);
    auto [it, inserted] = d.definition_files_.emplace(def.name, file);
    if (!inserted)
      fail("{}: definition '{}' is already defined in {}", file.string(), def.name,
           it->second.string());
    d.definitions_.emplace(def.name, std::move(def));
  }
  for (const auto& file : find_files(root / "workloads", ".jsonl")) {
    DatasetWorkloads w{file, load_workload_file(file)};
    for (std::size_t i = 0; i < w.records.size(); ++i) {
      const auto& r = w.records[i];
      const auto it = d.definitions_.find(r.definition);
      const std::string where = file.string() + ":" + std::to_string(i + 1);
      if (it == d.definitions_.end())
        fail("{}: workload {} names unknown definition '{}'", where, r.workload.uuid, r.definition);
      resolve_axes(it->second, r.workload, where);
    }
    d.workload_files_.push_back(std::move(w));
  }
  for (const auto& file : find_files(root / "solutions", ".json"))
    d.solutions_.push_back(load_solution(file));
  for (const auto& file : find_files(root / "traces", ".jsonl")) {
    std::istringstream lines(read_text_file(file));
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string source = file.string() + ":" + std::to_string(number);
      const Json doc = parse_json(line, source);
      d.traces_.push_back(Trace::from_json(JsonCursor(doc, source)));
    }
  }
  return d;
}

const Definition& Dataset::definition(const std::string& name) const {
  auto it = definitions_.find(name);
  if (it != definitions_.end()) return it->second;
  std::string have;
  for (const auto& [n, _] : definitions_) have += (have.empty() ? "" : ", ") + n;
  fail("{}: no definition named '{}' (has: {})", root_.string(), name,
       have.empty() ? "none" : have);
}

std::vector<Workload> Dataset::workloads(const std::string& definition) const {
  std::vector<Workload> out;
  for (const auto& f : workload_files_)
    for (const auto& r : f.records)
      if (r.definition == definition) out.push_back(r.workload);
  return out;
}

std::filesystem::path Dataset::resolve(const std::string& path) const {
  const std::filesystem::path p(path);
  return p.is_absolute() ? p : root_ / p;
}

}  // namespace kh

namespace kh {

std::filesystem::path workload_blob_path(const Definition& def, const std::string& uuid) {
  return std::filesystem::path("blob") / "workloads" / def.op_type / def.name /
         (def.name + "_" + uuid + ".safetensors");
}

std::filesystem::path trace_file_path(const Definition& def, const std::string& author) {
  return std::filesystem::path("traces") / author / def.op_type / (def.name + ".jsonl");
}

}  // namespace kh
