// Where kh's own headers are at run time. The kh binary is copied to other machines together with
// its source tree, so the candidate ABI header (include/kh/abi.h) and DLPack are looked up from
// the running executable rather than from the path kh was compiled in.
#pragma once

#include <filesystem>
#include <vector>

namespace kh {

/// The kh source root, the first of: $KH_HOME (an error if it lacks include/kh/abi.h); the nearest
/// folder above the running executable holding include/kh/abi.h; the source folder kh was built
/// from. An error naming every place looked in when none has the header.
std::filesystem::path kh_home();

/// {<root>/include, <root>/.deps/tvm-ffi/include}: the candidate ABI and DLPack headers.
std::vector<std::filesystem::path> kh_include_dirs();

/// <root>/include/kh/abi.h.
std::filesystem::path kh_abi_header();

}  // namespace kh
