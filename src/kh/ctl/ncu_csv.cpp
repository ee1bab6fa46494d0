#include "kh/ctl/ncu_csv.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "kh/core/error.h"

namespace kh::ctl {

const std::vector<std::string> kNcuMetrics = {
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
};

namespace {

std::vector<std::string> split_csv_line(const std::string& line, const std::string& where) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) fail("{}: unterminated quote", where);
  fields.push_back(std::move(field));
  return fields;
}

// ncu prints "7,136" and "1,234.5"; "n/a" and empty values have no number.
std::optional<double> number(std::string value) {
  value.erase(std::remove(value.begin(), value.end(), ','), value.end());
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0') return std::nullopt;
  return v;
}

// Seconds and bytes from ncu's unit names; percentages and counts stay as they are.
double scale_of(const std::string& unit) {
  static const std::map<std::string, double> kScales = {
      {"ns", 1e-9},   {"nsecond", 1e-9}, {"us", 1e-6},       {"usecond", 1e-6},
      {"ms", 1e-3},   {"msecond", 1e-3}, {"s", 1.0},         {"second", 1.0},
      {"byte", 1.0},  {"Kbyte", 1e3},    {"Mbyte", 1e6},     {"Gbyte", 1e9},
      {"KB", 1024.0}, {"MB", 1048576.0}, {"Kibyte", 1024.0}, {"Mibyte", 1048576.0}};
  const auto it = kScales.find(unit);
  return it == kScales.end() ? 1.0 : it->second;
}

// "(128, 1, 1)" -> 128; "(1,024, 1, 1)" -> 1024 (dimensions are separated by ", ", and a bare
// comma is a thousands separator).
double dim_product(std::string dims) {
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](char c) { return c == '(' || c == ')'; }),
             dims.end());
  double product = 1;
  bool any = false;
  std::size_t start = 0;
  while (start <= dims.size()) {
    std::size_t end = dims.find(", ", start);
    if (end == std::string::npos) end = dims.size();
    if (auto v = number(dims.substr(start, end - start))) {
      product *= *v;
      any = true;
    }
    start = end + 2;
  }
  return any ? product : 0;
}

std::optional<double> get(const std::map<std::string, double>& raw, const char* name) {
  const auto it = raw.find(name);
  return it == raw.end() ? std::nullopt : std::optional<double>(it->second);
}

void derive(KernelProfile& k) {
  const auto& raw = k.raw;
  if (auto d = get(raw, "gpu__time_duration.sum")) k.duration_seconds = *d;
  k.sm_throughput_pct = get(raw, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  k.memory_throughput_pct =
      get(raw, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  k.dram_throughput_pct = get(raw, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  k.registers_per_thread = get(raw, "launch__registers_per_thread");
  k.dynamic_smem_bytes = get(raw, "launch__shared_mem_per_block_dynamic");
  k.theoretical_occupancy_pct = get(raw, "sm__maximum_warps_per_active_cycle_pct");
  k.achieved_occupancy_pct = get(raw, "sm__warps_active.avg.pct_of_peak_sustained_active");
  k.waves_per_sm = get(raw, "launch__waves_per_multiprocessor");
  k.tensor_pipe_pct =
      get(raw, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  const auto ld = get(raw, "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum");
  const auto st = get(raw, "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum");
  if (ld || st) k.local_memory_bytes = ld.value_or(0) + st.value_or(0);
  const auto sectors = get(raw, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
  const auto requests = get(raw, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
  if (sectors && requests && *requests > 0) k.sectors_per_request = *sectors / *requests;
  // The limiter is the resource allowing the fewest blocks per SM.
  const std::pair<const char*, const char*> limits[] = {
      {"launch__occupancy_limit_registers", "registers"},
      {"launch__occupancy_limit_shared_mem", "shared_memory"},
      {"launch__occupancy_limit_warps", "warps"},
      {"launch__occupancy_limit_blocks", "blocks"}};
  std::optional<double> fewest;
  for (const auto& [metric, limiter] : limits)
    if (auto v = get(raw, metric); v && (!fewest || *v < *fewest)) {
      fewest = v;
      k.occupancy_limiter = limiter;
    }
}

}  // namespace

std::vector<KernelProfile> parse_ncu_csv(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::map<std::string, std::size_t> column;
  std::map<long, KernelProfile> launches;
  int line_number = 0;
  auto col = [&](const char* name) {
    const auto it = column.find(name);
    if (it == column.end())
      fail(
          "{}: ncu CSV header has no \"{}\" column (was it printed with --csv on the details "
          "page?)",
          source, name);
    return it->second;
  };
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line[0] != '"') continue;  // ==PROF== notes and the program's output
    const std::string where = fmt::format("{}:{}", source, line_number);
    auto fields = split_csv_line(line, where);
    if (header.empty()) {
      header = fields;
      for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
      col("ID"), col("Kernel Name"), col("Metric Name"), col("Metric Unit"), col("Metric Value");
      continue;
    }
    if (fields.size() != header.size())
      fail("{}: {} fields where the header has {}", where, fields.size(), header.size());
    const auto id = number(fields[col("ID")]);
    if (!id) fail("{}: ID \"{}\" is not a number", where, fields[col("ID")]);
    KernelProfile& k = launches[static_cast<long>(*id)];
    k.name = fields[col("Kernel Name")];
    if (column.count("Block Size") && column.count("Grid Size"))
      k.grid_threads =
          dim_product(fields[column["Block Size"]]) * dim_product(fields[column["Grid Size"]]);
    if (auto v = number(fields[col("Metric Value")]))
      k.raw[fields[col("Metric Name")]] = *v * scale_of(fields[col("Metric Unit")]);
  }
  if (header.empty()) fail("{}: no ncu CSV found (no line starts with a quoted header)", source);
  std::vector<KernelProfile> out;
  for (auto& [id, k] : launches) {
    derive(k);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace kh::ctl
