#!/usr/bin/env python3
"""Makes a candidate folder's default the best setting one GPU run measured.

After `bench/kernels/run_candidate_vs_library.sh OUT candidates/<name> [KNOBS...]` (the folder at
its first [params] values and at each knob setting given, swept against the library entry), this
reads OUT: if every correctness line passed, it takes the candidate with the highest geomean
speedup over the library (OUT/compare_*.json, its parameters from OUT/history.json) and moves
each of its parameter values to the front of the folder's candidate.toml [params] lists, so
that the folder's default, which `kh promote` and libkhk build, is that setting. Prints one JSON
object: {"best": hash, "geomean_speedup": g, "moved": {NAME: value, ...}} or {"best": null,
"why": ...}; exits 0 either way (3 on unreadable input).

usage: bench/kernels/pick_best_knobs.py OUT CANDIDATE_DIR [--dry-run]
"""
import glob
import json
import os
import re
import sys


def passed_everything(out):
    path = os.path.join(out, "correctness", "summary.txt")
    lines = [l for l in open(path).read().splitlines() if l.strip()]
    failing = [l for l in lines if not re.match(r".*: (\d+)/\1 passed", l)]
    return bool(lines) and not failing, failing


def best_candidate(out):
    params = {c["hash"][:12]: c["params"] for c in json.load(open(os.path.join(out, "history.json")))}
    best = None
    for path in glob.glob(os.path.join(out, "compare_*.json")):
        short = re.search(r"_([0-9a-f]{12})\.json$", path)
        if not short or short[1] not in params:
            continue
        g = json.load(open(path)).get("geomean_speedup")
        if g is not None and (best is None or g > best[1]):
            best = (short[1], g, params[short[1]])
    return best


def move_first(toml_text, values):
    """values: NAME -> value (strings, as kh stores them). Returns (text, moved)."""
    moved = {}
    for name, value in values.items():
        m = re.search(rf"^{re.escape(name)} = \[(.*)\]$", toml_text, re.M)
        if not m:
            continue
        items = [x.strip() for x in m[1].split(",")]
        plain = [x.strip('"') for x in items]
        if str(value) not in plain or plain[0] == str(value):
            continue
        i = plain.index(str(value))
        items = [items[i]] + items[:i] + items[i + 1:]
        toml_text = toml_text[: m.start()] + f"{name} = [{', '.join(items)}]" + toml_text[m.end():]
        moved[name] = str(value)
    return toml_text, moved


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, folder, dry = argv[1], argv[2], "--dry-run" in argv[3:]
    toml_path = os.path.join(folder, "candidate.toml")
    try:
        ok, failing = passed_everything(out)
        if not ok:
            print(json.dumps({"best": None, "why": "correctness", "lines": failing}))
            return 0
        best = best_candidate(out)
        if best is None:
            print(json.dumps({"best": None, "why": f"no comparison in {out}"}))
            return 0
        text, moved = move_first(open(toml_path).read(), best[2])
    except (OSError, ValueError, KeyError) as e:
        print(json.dumps({"best": None, "why": f"{type(e).__name__}: {e}"}))
        return 3
    if not dry:
        open(toml_path, "w").write(text)
    print(json.dumps({"best": best[0], "geomean_speedup": best[1], "moved": moved}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
