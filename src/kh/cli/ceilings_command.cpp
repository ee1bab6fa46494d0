// `kh ceilings`: measures this GPU's ceilings (gpu/ceilings_probe.h) and stores them as JSON for
// `kh eval --ceilings` (default file: .kh/ceilings/<gpu name>.json), and records them in the store.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/gpu/ceilings_probe.h"

namespace kh::cli {
namespace {

struct Options {
  int device = 0;
  std::string out;  // empty: .kh/ceilings/<gpu>.json
  bool json = false;
  StoreOptions store;
};

void run(const Options& o) {
  const bool progress = !o.json && isatty(STDERR_FILENO);
  const CeilingsReport r = measure_ceilings(o.device, [&](const std::string& what) {
    if (progress) std::cerr << "\r\033[Kmeasuring " << what << " ..." << std::flush;
  });
  if (progress) std::cerr << "\r\033[K" << std::flush;
  const std::filesystem::path out =
      o.out.empty() ? default_ceilings_path(r.ceilings.gpu) : std::filesystem::path(o.out);
  save_ceilings(r.ceilings, out);
  // Kept in the store too, so ceilings measured on a borrowed machine travel in its bundles.
  CeilingsRecord record;
  record.gpu = r.ceilings.gpu;
  record.ceilings = {{"ceilings", r.ceilings.to_json()}, {"details", r.details}};
  record.created_at = utc_timestamp();
  open_store(o.store)->put_ceilings(record);
  if (o.json) {
    std::cout << Json{{"file", out.string()},
                      {"ceilings", r.ceilings.to_json()},
                      {"details", r.details}}
                     .dump(2)
              << "\n";
    return;
  }
  const MachineCeilings& c = r.ceilings;
  std::cout << fmt::format(
      "{} (timed with {})\n  copy bandwidth  {:8.1f} GB/s\n  bf16 GEMM       {:8.1f} TFLOP/s\n"
      "  fp8 GEMM        {:8.1f} TFLOP/s\n  fp32 FMA        {:8.1f} TFLOP/s\n"
      "  empty kernel    {:8.2f} us\n  gather latency  {:8.1f} ns\nwritten to {}\n",
      c.gpu, r.details.value("method", ""), c.copy_bytes_per_second * 1e-9,
      c.bf16_flops_per_second * 1e-12, c.fp8_flops_per_second * 1e-12,
      c.fp32_flops_per_second * 1e-12, c.empty_kernel_seconds * 1e6, c.gather_latency_seconds * 1e9,
      out.string());
}

}  // namespace

void add_ceilings_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "ceilings", "Measure this GPU's copy bandwidth, GEMM rates and latencies for rooflines");
  cmd->add_option("--device", o->device, "CUDA device")->capture_default_str();
  cmd->add_option("--out,-o", o->out, "JSON file to write (default .kh/ceilings/<gpu>.json)");
  cmd->add_flag("--json", o->json, "print the ceilings and every probe as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
