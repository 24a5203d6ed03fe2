#!/usr/bin/env python3
"""Checks coll-sim's start-up plan against real jobs: every rank's store requests, phase by phase.

For each layout, one job (collrun -n N all_reduce_perf of 8 B) with COLL_DEBUG=INFO, whose
ranks log their start-up phases with the requests each made (src/comm/startup_report.h);
COLL_HOST_ID=h{rank/K} makes one machine pose as hosts of K ranks (the last one smaller
where K does not divide N). Each rank's count must equal the plan of
`coll-sim --startup-plan` (tools/sim/startup_plan.h); a phase where one rank of the job
may make a request more (the roll call's verdict) must have exactly one such rank.

  startup_check.py [--build build] [--layouts 1:1,2:2,5:5,7:3,4:1,6:2]   (N:K, K ranks a host)

Exit 0 when every rank of every layout matches; else 1, naming the layout, rank and phase.
"""
import argparse
import os
import re
import subprocess
import sys

READY = re.compile(r"rank (\d+) of (\d+) ready in [0-9.]+ ms: (.*?); store \d+ requests")
PHASE = re.compile(r"([a-z][a-z -]*?) [0-9.]+/(\d+)")


def measured(build, n, k, timeout):
    env = dict(os.environ, COLL_DEBUG="INFO", COLL_DEBUG_SUBSYS="INIT", COLL_HOST_ID=f"h{{rank/{k}}}")
    job = subprocess.run([f"{build}/bin/collrun", "-n", str(n), f"{build}/bin/all_reduce_perf", "-b", "8", "-e", "8",
                          "-n", "1", "-w", "0", "-c", "1"], env=env, capture_output=True, text=True, timeout=timeout)
    if job.returncode != 0:
        raise SystemExit(f"{n}:{k}: the job failed ({job.returncode}):\n{job.stderr[-2000:]}")
    counts = {}
    for m in READY.finditer(job.stderr):
        counts[int(m.group(1))] = {name.strip().replace(" ", "_"): int(req) for name, req in PHASE.findall(m.group(3))}
    if len(counts) != n:
        raise SystemExit(f"{n}:{k}: {len(counts)} of {n} ranks logged their start-up")
    return counts


def planned(build, n, k):
    hosts = [k] * (n // k) + ([n % k] if n % k else [])
    out = subprocess.run([f"{build}/bin/coll-sim", "--startup-plan", ",".join(map(str, hosts))], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    plan = {}
    for line in out.splitlines():
        words = line.split()
        rank = int(words[1])
        plan[rank] = {}
        for item in words[2:]:
            name, value = item.split("=")
            base, _, extra = value.partition("+")
            plan[rank][name] = (int(base), int(extra or 0))
    return plan


def check(build, n, k, timeout):
    got, plan = measured(build, n, k, timeout), planned(build, n, k)
    problems, extras = [], {}
    for rank in range(n):
        if set(got[rank]) != set(plan[rank]):
            problems.append(f"rank {rank}: phases {sorted(got[rank])} logged, {sorted(plan[rank])} planned")
            continue
        for phase, (base, may_add) in plan[rank].items():
            over = got[rank][phase] - base
            if over < 0 or over > may_add:
                problems.append(f"rank {rank} {phase}: {got[rank][phase]} requests, planned {base}"
                                + (f" (+{may_add} on one rank)" if may_add else ""))
            elif may_add:
                extras[phase] = extras.get(phase, 0) + over
    for phase, total in extras.items():
        if total != 1:
            problems.append(f"{phase}: {total} ranks made the one extra request planned for exactly one")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--layouts", default="1:1,2:2,5:5,7:3,4:1,6:2")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    failed = False
    for layout in args.layouts.split(","):
        n, k = (int(x) for x in layout.split(":"))
        problems = check(args.build, n, k, args.timeout)
        print(f"{n} ranks, {k} a host: " + ("every rank as planned" if not problems else "MISMATCH"))
        for p in problems:
            print("  " + p)
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
