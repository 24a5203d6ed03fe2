#!/usr/bin/python3
"""The pass/fail/skip table of torch's suite, gloo beside coll, from run_suite.py --json files,
and every test whose outcome differs between the two at a world size.

    tests/torch_suite/table.py /tmp/coll-suite/*.json
"""
import json
import sys

KINDS = ("passed", "failed", "error", "skipped")


def main():
    runs = {}
    for path in sys.argv[1:]:
        with open(path) as f:
            run = json.load(f)
        runs[(run["world_size"], run["backend"].split(":")[0])] = run["tests"]
    print("| world size | backend | " + " | ".join(KINDS) + " | total |")
    print("|---|---|" + "---|" * (len(KINDS) + 1))
    differ = []
    for ws in sorted({w for w, _ in runs}):
        for backend in ("gloo", "coll"):
            tests = runs.get((ws, backend))
            if tests is None:
                continue
            counts = [sum(1 for v in tests.values() if v == k) for k in KINDS]
            print(f"| {ws} | {backend} | " + " | ".join(map(str, counts)) + f" | {len(tests)} |")
        g, c = runs.get((ws, "gloo"), {}), runs.get((ws, "coll"), {})
        differ += [(ws, t, g.get(t), c.get(t)) for t in sorted(set(g) | set(c)) if g.get(t) != c.get(t)]
    print()
    if not differ:
        print("Every test has the same outcome under both backends at every world size.")
    for ws, t, g, c in differ:
        print(f"world size {ws}: {t}: gloo {g}, coll {c}")
    regressions = [d for d in differ if d[2] == "passed" and d[3] != "passed"]
    sys.exit(1 if regressions else 0)


if __name__ == "__main__":
    main()
