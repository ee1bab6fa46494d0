// A FlashInfer-Bench dataset folder (a "trace set"):
//   definitions/<op_type>/<def>.json       workloads/<op_type>/<def>.jsonl
//   solutions/<author>/<op_type>/<def>/<sol>.json
//   blob/workloads/<op_type>/<def>/<def>_<uuid>.safetensors
// Files are found recursively in sorted order; duplicate definition names are an error. kh's own
// shipped data (`definitions/`, `workloads/` at the repository root) is such a folder, and so is
// the official contest dataset.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kh/spec/definition.h"
#include "kh/spec/solution.h"
#include "kh/spec/trace.h"
#include "kh/spec/workload.h"

namespace kh {

struct DatasetWorkloads {
  std::filesystem::path file;
  std::vector<WorkloadRecord> records;
};

class Dataset {
 public:
  /// Loads every definition and workload file under root; solutions are loaded too if present.
  static Dataset open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  const std::map<std::string, Definition>& definitions() const { return definitions_; }
  const Definition& definition(const std::string& name) const;  // error names what exists
  /// Workloads of one definition in file order (empty if it has none).
  std::vector<Workload> workloads(const std::string& definition) const;
  const std::vector<DatasetWorkloads>& workload_files() const { return workload_files_; }
  const std::vector<Solution>& solutions() const { return solutions_; }
  /// Every trace line under traces/ (evaluations of solutions on workloads).
  const std::vector<Trace>& traces() const { return traces_; }

  /// Where a safetensors path of a workload input points (relative paths are under root).
  std::filesystem::path resolve(const std::string& path) const;

 private:
  std::filesystem::path root_;
  std::map<std::string, Definition> definitions_;
  std::map<std::string, std::filesystem::path> definition_files_;
  std::vector<DatasetWorkloads> workload_files_;
  std::vector<Solution> solutions_;
  std::vector<Trace> traces_;
};

/// Where FlashInfer-Bench keeps a workload's safetensors inputs, relative to the dataset root:
/// blob/workloads/<op_type>/<def>/<def>_<uuid>.safetensors.
std::filesystem::path workload_blob_path(const Definition& def, const std::string& uuid);
/// Where evaluations of an author's solutions are appended: traces/<author>/<op_type>/<def>.jsonl.
std::filesystem::path trace_file_path(const Definition& def, const std::string& author);

/// Files under dir whose extension is ext, recursively, sorted; empty if dir does not exist.
std::vector<std::filesystem::path> find_files(const std::filesystem::path& dir,
                                              const std::string& ext);

}  // namespace kh
