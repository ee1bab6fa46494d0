#include "kh/build/kh_home.h"

#include <cstdlib>

#include "kh/core/error.h"

namespace kh {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAbiHeader = "include/kh/abi.h";
constexpr const char* kDlpackInclude = ".deps/tvm-ffi/include";

bool has_abi_header(const fs::path& root) {
  std::error_code ec;
  return fs::is_regular_file(root / kAbiHeader, ec);
}

}  // namespace

fs::path kh_home() {
  if (const char* env = std::getenv("KH_HOME"); env != nullptr && *env != '\0') {
    if (!has_abi_header(env))
      fail("KH_HOME={}: no {} there; point KH_HOME at the kh source folder", env, kAbiHeader);
    return fs::absolute(env).lexically_normal();
  }
  std::vector<std::string> looked;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (has_abi_header(dir)) return dir;
      if (dir == dir.parent_path()) break;
    }
    looked.push_back("every folder above " + exe.string());
  } else {
    looked.push_back("/proc/self/exe (unreadable: " + ec.message() + ")");
  }
#ifdef KH_DEFAULT_HOME
  if (has_abi_header(KH_DEFAULT_HOME)) return fs::path(KH_DEFAULT_HOME);
  looked.push_back(std::string(KH_DEFAULT_HOME) + " (the build's source folder)");
#endif
  std::string where;
  for (const auto& l : looked) where += (where.empty() ? "" : ", ") + l;
  fail("cannot find {} (looked in {}); set KH_HOME to the kh source folder", kAbiHeader, where);
}

std::vector<fs::path> kh_include_dirs() {
  const fs::path root = kh_home();
  const fs::path dlpack = root / kDlpackInclude;
  std::error_code ec;
  if (!fs::is_regular_file(dlpack / "dlpack/dlpack.h", ec))
    fail("{}: no dlpack/dlpack.h there; run scripts/bootstrap.sh in {}", dlpack.string(),
         root.string());
  return {root / "include", dlpack};
}

fs::path kh_abi_header() {
  return kh_home() / kAbiHeader;
}

}  // namespace kh
