#!/usr/bin/env python3
"""Flags an `if constexpr` whose unbraced body (or `else` body) is a loop or switch with a braced
body, in the project's C++ and CUDA sources.

nvcc 13.0 (V13.0.88) miscompiles it: inside a lambda of a function template, when the condition is
false (the statement is discarded), a body that is a `for` or `while` loop or a `switch` with a
braced body takes the statement after it along, which silently disappears; the same for such an
`else` branch when the condition is true. (`do ... while` compiles correctly.) Found on 2026-12-05 when the DSA
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
    """Yields (line number, line) of each `if constexpr (...)` whose statement, or whose `else`
    statement, is a loop or switch with a braced body (the condition may span lines).

    The reproducer (nvcc 13.0, -std=c++17, k<false> stores nothing):
        template <bool kB> __global__ void k(int* p, int n) {
          auto f = [&](int x) {
            if constexpr (kB)
              for (int i = 0; i < n; ++i) { p[i] = x; }
            for (int i = 0; i < n; ++i) p[i + 100] = 0;  // dropped when kB is false
          };
          f(threadIdx.x);
        }
    The same with the loop as the discarded `else` branch, or a `switch` for the loop.
    """
    lines = text.split("\n")
    code = [l.split("//")[0] if not l.strip().startswith("#") else "" for l in lines]
    joined = "\n".join(code)
    starts = [0]
    for l in code:
        starts.append(starts[-1] + len(l) + 1)

    def line_of(offset):
        return next(i for i in range(len(starts) - 1) if starts[i + 1] > offset)

    def risky(at):  # the statement starting at offset `at`
        statement = joined[at:].lstrip()
        return re.match(r"(for|while|switch)\b", statement) and braced_body(statement)

    for match in re.finditer(r"\bif constexpr\s*\(", joined):
        depth, j = 1, match.end()
        while j < len(joined) and depth > 0:  # the condition, across lines
            depth += {"(": 1, ")": -1}.get(joined[j], 0)
            j += 1
        flagged = risky(j)
        # The then-statement's end, then an `else` whose statement is risky.
        end = statement_end(joined, j)
        if end is not None:
            rest = joined[end:]
            other = re.match(r"\s*else\b", rest)
            if other and not re.match(r"\s*if\b", rest[other.end():]):
                flagged = flagged or risky(end + other.end())
        if flagged:
            number = line_of(match.start())
            yield number + 1, lines[number].strip()


def statement_end(text, at):
    """The offset just past the statement starting at `at` (a braced block, or up to the `;` that
    ends it outside parentheses and braces); None if it does not end."""
    depth_paren = depth_brace = 0
    i = at
    while i < len(text):
        c = text[i]
        if c == "(":
            depth_paren += 1
        elif c == ")":
            depth_paren -= 1
        elif c == "{":
            depth_brace += 1
        elif c == "}":
            depth_brace -= 1
            if depth_brace == 0 and depth_paren == 0:
                # A loop's braced body ends the statement; a leading block too.
                return i + 1
        elif c == ";" and depth_paren == 0 and depth_brace == 0:
            return i + 1
        i += 1
    return None


def braced_body(statement):
    """Whether the loop or switch that starts `statement` has a braced body somewhere (a `{`
    outside parentheses before the first `;` outside them): `for (...) f();` and nested unbraced
    loops compile correctly, `for (...) { f(); }` does not."""
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
        "if constexpr (a &&\n              b)\n  for (;;) { f(); }\nq();",
        "if constexpr (kB) {\n  g();\n} else for (int i = 0; i < n; ++i) { f(i); }\nq();",
        "if constexpr (kB) g();\nelse\n  switch (x) { case 0: f(); }\nq();",
        "if constexpr (kB)\n  switch (x) {\n    case 0: f();\n  }\nq();",
    ]
    clean = [
        "if constexpr (kB) {\n  for (int i = 0; i < n; ++i) { p[i] = 1; }\n}\nq();",
        "if constexpr (kB)\n  for (int g = 0; g < n; ++g)\n    for (int i = 0; i < 2; ++i)\n"
        "      f(g, i);\nq();",
        "if constexpr (kB) f(x);\nfor (;;) {}",
        "if constexpr (kB)\n  g();\nelse\n  h();",
        "if constexpr (kB) {\n  g();\n} else {\n  for (;;) { f(); }\n}\nq();",
        "if constexpr (kB) g();\nelse if constexpr (kC) h();\nfor (;;) { f(); }",
        "if constexpr (kB)\n  do { f(); } while (g());\nq();",
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
            print(f"{path.relative_to(root)}:{number}: brace the loop or switch that is a branch of "
                  f"`{line}` (nvcc 13.0 drops the next statement when that branch is discarded)")
            findings += 1
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
