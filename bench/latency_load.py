#!/usr/bin/python3
"""Small-message all-reduce latency on one host, idle and under load: coll beside Open MPI in
the same run, the median and the 99th percentile of per-op times.

  bench/latency_load.py                       2 and 4 ranks, idle and loaded, 3 rounds
  bench/latency_load.py --ranks 2 --rounds 1  a quick look

Each launch times every op alone (coll's -K 1; mpi_perf times each MPI_Allreduce), pools the
per-op times of all ranks and reports their median and 99th percentile. "loaded" runs one
busy process per core beside the job (a spinning loop at normal priority, as a data loader or
a second job would), started before and killed after each launch. Rounds interleave the two
systems; the table gives the median over rounds of each figure.

Placement: each system's default on an idle machine, as bench/compare.py --local does: coll
pinned, rank r on core r mod the cores (what collrun's --bind-to auto does there; given as
--bind-to core so that the loaded runs keep it), Open MPI binding by its own rules.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = [8, 64, 512, 4096]


def busy_processes(count):
    """count spinning processes (their own session, so one kill takes each)."""
    return [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"], start_new_session=True)
            for _ in range(count)]


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def run_coll(build, n, iters, warmup, timeout):
    """{size: (p50_us, p99_us)} from coll's all_reduce_perf -K 1 -J."""
    out = Path(tempfile.mkstemp(prefix="coll-lat.", suffix=".json")[1])
    cmd = [str(build / "bin/collrun"), "--bind-to", "core", "-n", str(n), str(build / "bin/all_reduce_perf"),
           "-b", str(SIZES[0]), "-e", str(SIZES[-1]), "-f", "8", "-n", str(iters), "-w", str(warmup),
           "-c", "1", "-K", "1", "-J", str(out)]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=timeout, check=True)
    rows = {}
    for line in out.read_text().splitlines():
        d = json.loads(line)
        if not d["inplace"]:
            rows[d["size"]] = (d["p50_us"], d["p99_us"])
    out.unlink()
    return rows


def run_openmpi(build, n, iters, warmup, timeout):
    """{size: (p50_us, p99_us)} from mpi_perf's extra columns."""
    plan = ",".join(f"{s}:{iters}:{warmup}" for s in SIZES)
    cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n", str(n),
           str(build / "peers/mpi_perf_openmpi"), "allreduce", "--plan", plan, "1"]
    text = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          check=True).stdout
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():
            rows[int(f[0])] = (float(f[5]), float(f[6]))
    return rows


def measure(args):
    """results[(n, load, system, size)] = ([p50 per round], [p99 per round])"""
    results = {}
    runners = {"coll": run_coll, "openmpi": run_openmpi}
    for rnd in range(args.rounds):
        for n in args.ranks:
            for load in args.loads:
                order = list(runners) if rnd % 2 == 0 else list(reversed(runners))
                for system in order:
                    busy = busy_processes(os.cpu_count() or 1) if load == "loaded" else []
                    try:
                        rows = runners[system](Path(args.build), n, args.iters, args.warmup, args.timeout)
                    finally:
                        stop(busy)
                    for size, (p50, p99) in rows.items():
                        entry = results.setdefault((n, load, system, size), ([], []))
                        entry[0].append(p50)
                        entry[1].append(p99)
                    print(f"# round {rnd + 1} {n} ranks {load:6s} {system:8s} done", file=sys.stderr, flush=True)
    return results


def table(args, results):
    lines = [f"# all-reduce float32 sum, per-op times pooled over ranks, {args.iters} ops per size per launch; "
             f"median over {args.rounds} round(s); {os.cpu_count()} cores; loaded = one busy process per core",
             f"{'ranks':>5} {'load':>6} {'size':>6} {'coll p50':>9} {'ompi p50':>9} {'p50 ratio':>9} "
             f"{'coll p99':>9} {'ompi p99':>9} {'p99 ratio':>9}"]
    for n in args.ranks:
        for load in args.loads:
            for size in SIZES:
                c = results.get((n, load, "coll", size))
                o = results.get((n, load, "openmpi", size))
                if not c or not o:
                    continue
                c50, c99 = statistics.median(c[0]), statistics.median(c[1])
                o50, o99 = statistics.median(o[0]), statistics.median(o[1])
                lines.append(f"{n:>5} {load:>6} {size:>6} {c50:9.2f} {o50:9.2f} {c50 / o50:9.2f} "
                             f"{c99:9.2f} {o99:9.2f} {c99 / o99:9.2f}")
    lines.append("# ratio = coll / Open MPI: the goal is p50 ratio <= 1 and p99 ratio <= 2")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--loads", default="idle,loaded")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--build", default=str(ROOT / "build"))
    args = p.parse_args()
    args.ranks = [int(x) for x in args.ranks.split(",")]
    args.loads = args.loads.split(",")
    print(table(args, measure(args)))


if __name__ == "__main__":
    main()
