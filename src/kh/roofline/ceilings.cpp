#include "kh/roofline/ceilings.h"

#include <cctype>
#include <cmath>

namespace kh {
namespace {

// A rate is a divisor of every floor: zero, negative or non-finite would give a meaningless one.
double read_rate(const JsonCursor& object, const char* field) {
  const JsonCursor c = object.at(field);
  const double value = c.as_number();
  if (!std::isfinite(value) || value <= 0) c.fail_here("expected a finite rate > 0");
  return value;
}

double read_latency(const JsonCursor& object, const char* field) {
  const JsonCursor c = object.at(field);
  const double value = c.as_number();
  if (!std::isfinite(value) || value < 0) c.fail_here("expected a finite time >= 0 (seconds)");
  return value;
}

}  // namespace

Json MachineCeilings::to_json() const {
  Json j = Json::object();
  j["gpu"] = gpu;
  j["copy_bytes_per_second"] = copy_bytes_per_second;
  j["bf16_flops_per_second"] = bf16_flops_per_second;
  j["fp8_flops_per_second"] = fp8_flops_per_second;
  j["fp32_flops_per_second"] = fp32_flops_per_second;
  j["empty_kernel_seconds"] = empty_kernel_seconds;
  j["gather_latency_seconds"] = gather_latency_seconds;
  return j;
}

MachineCeilings MachineCeilings::from_json(const JsonCursor& c) {
  c.expect_object();
  MachineCeilings m;
  m.gpu = c.at("gpu").as_string();
  m.copy_bytes_per_second = read_rate(c, "copy_bytes_per_second");
  m.bf16_flops_per_second = read_rate(c, "bf16_flops_per_second");
  m.fp8_flops_per_second = read_rate(c, "fp8_flops_per_second");
  m.fp32_flops_per_second = read_rate(c, "fp32_flops_per_second");
  m.empty_kernel_seconds = read_latency(c, "empty_kernel_seconds");
  m.gather_latency_seconds = read_latency(c, "gather_latency_seconds");
  return m;
}

MachineCeilings load_ceilings(const std::filesystem::path& path) {
  const Json j = read_json_file(path);
  return MachineCeilings::from_json(JsonCursor(j, path.string()));
}

std::filesystem::path default_ceilings_path(const std::string& gpu) {
  std::string name = gpu;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return std::filesystem::path(".kh") / "ceilings" / (name + ".json");
}

void save_ceilings(const MachineCeilings& ceilings, const std::filesystem::path& path) {
  write_text_file_atomic(path, ceilings.to_json().dump(2) + "\n");
}

}  // namespace kh
