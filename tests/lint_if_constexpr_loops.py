#!/usr/bin/env python3
"""Flags an `if constexpr` whose unbraced body is a loop with a braced body, in the project's C++
and CUDA sources.

nvcc 13.0 (V13.0.88) miscompiles it: inside a lambda of a function template, when the condition is
false (the statement is discarded), a body that is a `for` or `while` loop with a braced body
takes the statement after it along, which silently disappears. Found on 2026-12-05 when the DSA
candidate's zero-fill of a gather stage vanished from one instantiation (NaN outputs, caught by
the correctness run); a minimal reproducer is in the docstring of check_text. Writing the body in
braces (`if constexpr (c) { for (...) {...} }`) compiles correctly, so this check asks for it.

Usage: lint_if_constexpr_loops.py ROOT        (exit 1 and one line per finding if any)
       lint_if_constexpr_loops.py --self-test (the planted cases must be flagged, the braced not)
"""
import pathlib
import re
import sys

SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".cpp"}
SKIP_DIRS = {"build", ".deps", ".git", ".devrun", ".whl"}


def check_text(text):
    """Yields (line number, line) of each `if constexpr (...)` whose statement is a loop.

    The reproducer (nvcc 13.0, -std=c++17, k<false> stores nothing):
        template <bool kB> __global__ void k(int* p, int n) {
          auto f = [&](int x) {
            if constexpr (kB)
              for (int i = 0; i < n; ++i) { p[i] = x; }
            for (int i = 0; i < n; ++i) p[i + 100] = 0;  // dropped when kB is false
          };
          f(threadIdx.x);
        }
    """
    lines = text.split("\n")
    for i, line in enumerate(lines):
        match = re.search(r"\bif constexpr\s*\(", line)
        if not match:
            continue
        rest, depth, j = line[match.end():], 1, 0
        while j < len(rest) and depth > 0:
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            j += 1
        # The statement after the condition, from the rest of the line and the lines after it
        # (comments and preprocessor lines dropped).
        text = [rest[j:].split("//")[0]] + [l.split("//")[0] for l in lines[i + 1:i + 40]
                                            if not l.strip().startswith("#")]
        statement = " ".join(text).strip()
        if re.match(r"(for|while|do)\b", statement) and braced_loop_body(statement):
            yield i + 1, line.strip()


def braced_loop_body(statement):
    """Whether the loop that starts `statement` has a braced body somewhere (a `{` outside
    parentheses before the first `;` outside them): `for (...) f();` and nested unbraced loops
    compile correctly, `for (...) { f(); }` does not."""
    depth = 0
    for c in statement:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and c == "{":
            return True
        elif depth == 0 and c == ";":
            return False
    return False


def self_test():
    planted = [
        "if constexpr (kB)\n  for (int i = 0; i < n; ++i) { p[i] = 1; }\nq();",
        "if constexpr (kB)  // a comment\n#pragma unroll\n  for (;;) {}\n",
        "if constexpr (sizeof(T) > (2)) while (n--) { f(); }",
    ]
    clean = [
        "if constexpr (kB) {\n  for (int i = 0; i < n; ++i) { p[i] = 1; }\n}\nq();",
        "if constexpr (kB)\n  for (int g = 0; g < n; ++g)\n    for (int i = 0; i < 2; ++i)\n"
        "      f(g, i);\nq();",
        "if constexpr (kB) f(x);\nfor (;;) {}",
        "if constexpr (kB)\n  g();\nelse\n  h();",
    ]
    failures = [t for t in planted if not list(check_text(t))]
    failures += [t for t in clean if list(check_text(t))]
    for t in failures:
        print("self-test: wrong verdict on:\n" + t)
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    findings = 0
    for path in sorted(root.rglob("*")):
        if path.suffix not in SUFFIXES or SKIP_DIRS & set(path.relative_to(root).parts):
            continue
        for number, line in check_text(path.read_text(errors="replace")):
            print(f"{path.relative_to(root)}:{number}: brace the loop body of `{line}` "
                  "(nvcc 13.0 drops the next statement when it is discarded)")
            findings += 1
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
