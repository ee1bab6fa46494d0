#!/bin/sh
# libkhk exports exactly one C ABI entry per kernels/<op>/ (khk_<definition>, the candidate's
# entry), its _error function and, where the operator uses a workspace, its _workspace_bytes, each
# declared in kernels/khk.h; nothing else leaks.
# Usage: tests/libkhk_exports.sh LIBKHK SOURCE_DIR
set -eu
lib=$1 root=$2
expected=$(for toml in "$root"/kernels/*/candidate.toml; do
  def=$(sed -n 's/^definition *= *"\(.*\)"/\1/p' "$toml")
  entry=$(sed -n 's/^entry *= *".*::\(.*\)"/\1/p' "$toml")
  if [ "$entry" != "khk_$def" ]; then
    echo "$toml: entry $entry should be khk_$def" >&2; exit 1
  fi
  for sym in "$entry" "${entry}_error"; do
    grep -Eq "^KH_EXPORT .*[ *]$sym\(" "$root/kernels/khk.h" ||
      { echo "kernels/khk.h does not declare $sym" >&2; exit 1; }
    echo "$sym"
  done
  # Optional: exported exactly when the entry's source defines it.
  if grep -q "KH_EXPORT uint64_t ${entry}_workspace_bytes" "$(dirname "$toml")"/*.cu; then
    grep -Eq "^KH_EXPORT .*[ *]${entry}_workspace_bytes\(" "$root/kernels/khk.h" ||
      { echo "kernels/khk.h does not declare ${entry}_workspace_bytes" >&2; exit 1; }
    echo "${entry}_workspace_bytes"
  fi
done | sort)
actual=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
if [ "$expected" != "$actual" ]; then
  printf 'libkhk exports:\n%s\nexpected:\n%s\n' "$actual" "$expected" >&2
  exit 1
fi
echo "libkhk exports $(echo "$actual" | wc -l) symbols, as expected"
