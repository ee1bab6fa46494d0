#!/usr/bin/env bash
# The flags the micro-benchmarks build a kernel folder with, as the harness would at its defaults:
# the first value of each [params] entry of FOLDER/candidate.toml as -DNAME=value, one per line,
# each NAME=value given after FOLDER in place of its entry (the run_*.sh scripts' *_PARAMS).
# Usage: bench/micro/candidate_defines.sh FOLDER [NAME=value ...]
set -eu
folder=${1:?usage: candidate_defines.sh FOLDER [NAME=value ...]}
shift
defines=$(sed -n 's/^\([A-Z_][A-Z0-9_]*\) *= *\[ *\([^],]*\).*/-D\1=\2/p' "$folder/candidate.toml" |
  tr -d '"')
for param in "$@"; do
  defines=$(echo "$defines" | grep -v "^-D${param%%=*}=")
  defines="$defines"$'\n'"-D$param"
done
echo "$defines"
