#!/usr/bin/python3
"""coll beside Open MPI, MPICH and torch.distributed gloo: the same collectives, the same
sizes, in the same run, interleaved, several rounds, medians, every result checked.

  bench/compare.py --local 4                                   one host, 4 ranks
  bench/compare.py --local 2,4                                 one host, 2 ranks then 4
  bench/compare.py --netcluster 4 --per-host 1 --rate 1gbit    simulated cluster (root)
  bench/compare.py --all                                       the four scenarios of docs/PERFORMANCE.md
  bench/compare.py --cpu-bound                                 netcluster unshaped and at 10gbit (root)
  bench/compare.py --netcluster 2 --per-host 2 --algos "ring direct hierarchical" --in-job
                                        coll's forced all-reduce algorithms beside its own pick
  bench/compare.py --netcluster 2 --per-host 2 --ddp --batch 2  torch DDP step, coll beside gloo
  bench/compare.py --netcluster 2 --per-host 2 --tf --batch 2 --tf-python VENV/bin/python
                                        Keras step, coll.tensorflow beside MultiWorkerMirroredStrategy
  bench/compare.py --local 2 --systems coll,coll-ucx           coll's ucx transport beside its own

Per scenario it prints one table per collective (size, each system's median busbw, coll's
ratio to the best peer) and writes, under --out, <scenario>.txt (the tables), <scenario>.csv
(every measurement of every system and round), <scenario>_<collective>.csv (medians) and
<scenario>_<collective>.png (busbw against size, log axes, the physical limit as a line:
the link rate on netcluster, memcpy bandwidth measured in the same run on one host).

Beside busbw each table gives the CPU-seconds (user + system, every thread) all ranks spent per
GB of buffer in the timed loop, which decides the speed where the CPUs are the bottleneck.

busbw follows nccl-tests: algbw = size / time (size: the whole buffer, i.e. all-gather's
output and reduce-scatter's input), busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for
all-gather and reduce-scatter, x 1 for broadcast. Times are out-of-place (broadcast in place),
mean over ranks; --in-place (one host) measures every system in place instead.

--algos, --ddp and --tf are modes of their own, in the same scenarios: compare_lib/algos.py,
compare_lib/ddp.py and compare_lib/tf_step.py say what they measure and print.
"""
import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from compare_lib import algos, ddp, tf_step
from compare_lib.common import *  # noqa: F401,F403
from compare_lib.report import *  # noqa: F401,F403
from compare_lib.scenarios import *  # noqa: F401,F403


def scenarios_from(args):
    if args.headline or args.replot:
        return []
    if args.all:
        return [("local", 2), ("local", 4), ("net", 4, 1), ("net", 2, 2)]
    if args.cpu_bound:
        return [("net", h, r, rate) for rate in ("none", "10gbit") for h, r in ((4, 1), (2, 2))]
    if args.local:
        return [("local", n) for n in args.local]
    if args.netcluster:
        return [("net", args.netcluster, args.per_host, args.rate)]
    sys.exit("compare: give --local N, --netcluster H [--per-host R] or --all")


def make_scenario(args, spec):
    if spec[0] == "local":
        return LocalScenario(args, spec[1])
    return NetclusterScenario(args, spec[1], spec[2], spec[3])


def run_scenario(args, spec, out, log):
    scn = make_scenario(args, spec)
    try:
        if isinstance(scn, NetclusterScenario):
            scn.up()
        if args.algos:
            return algos.algo_sweep(scn, out, log, parse_bytes)
        if args.ddp:
            return ddp.ddp_steps(scn, out, log)
        if args.tf:
            return tf_step.tf_steps(scn, out, log)
        m, systems = measure(scn, args.collectives, args.rounds, log)
        return report(scn, m, systems, args.collectives, out, args.rounds)
    finally:
        kill_live()
        if isinstance(scn, NetclusterScenario):
            scn.down()
        scn.close()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--local", metavar="N[,N...]", help="one host, N ranks (a list: one scenario each)")
    p.add_argument("--netcluster", type=int, metavar="H", help="simulated cluster of H hosts (root)")
    p.add_argument("--per-host", type=int, default=1, metavar="R")
    p.add_argument("--rate", default="1gbit", help="netcluster link rate (tc syntax)")
    p.add_argument("--all", action="store_true", help="local 2 and 4; netcluster 4x1 and 2x2")
    p.add_argument("--cpu-bound", action="store_true",
                   help="netcluster 4x1 and 2x2 with shaping off (--rate none) and at 10gbit, 16-256 MiB: "
                        "where the CPUs, not the links, are the limit (root)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--collectives", default=",".join(COLLECTIVES))
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"a subset, for quick looks; or add the on-request ones: {','.join(EXTRA_SYSTEMS)}")
    p.add_argument("--sizes", help="comma-separated bytes (default 8,64K,1M,16M,64M)")
    p.add_argument("--blocking", action="store_true",
                   help="coll waits for each op (-z 2), as the MPI calls and torch's do: latency, not "
                        "ops in flight back to back")
    p.add_argument("--in-place", action="store_true",
                   help="one host: every system in place (coll's in-place cells, MPI_IN_PLACE; gloo "
                        "for all-reduce and broadcast only)")
    p.add_argument("--net-mpich", action="store_true", help="MPICH on netcluster too (UCX over TCP)")
    p.add_argument("--net-256m", action="store_true", help="add 256 MiB on netcluster (seconds per op)")
    p.add_argument("--budget", type=int, default=64 << 20,
                   help="bytes per measurement: iterations = budget / size, at least 3")
    p.add_argument("--max-iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed ops before each measurement, every system (default: a tenth of the timed ones). "
                        "coll reads reused send buffers by CMA once they are huge-page backed, after 8 uses "
                        "(src/transport/shm/huge_pages.h): --warmup 20 shows that steady state")
    p.add_argument("--tcp-floor", action="store_true",
                   help="netcluster: measure bare TCP streams at any rate (by default only unshaped or above "
                        "1 Gbit/s, where the CPUs may decide)")
    p.add_argument("--prefix", default=NC_PREFIX, help="netcluster host names (this run's own cluster)")
    p.add_argument("--subnet", default=NC_SUBNET, help="netcluster subnet, A.B.C")
    p.add_argument("--timeout", type=int, help="seconds per launch (300; --algos and --ddp 1800)")
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--torch-python", default=DEBIAN_PYTHON, metavar="PY",
                   help="the Python whose torch runs gloo, torch-coll and --ddp: Debian's (torch 1.13, coll from "
                        "BUILD/python; the default), or a venv's with coll pip-installed (torch 2.x)")
    p.add_argument("--out", default=str(ROOT / "build/compare"))
    p.add_argument("--replot", action="store_true",
                   help="only redraw the PNGs from the CSVs and tables already under --out")
    p.add_argument("--headline", action="store_true",
                   help="only print the markdown summary of the CSVs already under --out")
    algos.add_args(p)
    ddp.add_args(p)
    tf_step.add_args(p)
    args = p.parse_args()
    args.local = [int(n) for n in args.local.split(",")] if args.local else None
    if sum(map(bool, (args.algos, args.ddp, args.tf))) > 1:
        p.error("--algos, --ddp and --tf are separate runs")
    if args.timeout is None:
        args.timeout = 1800 if args.algos or args.ddp or args.tf else 300
    args.collectives = [c for c in args.collectives.split(",") if c]
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = set(args.collectives) - set(COLLECTIVES)
    if unknown:
        p.error(f"unknown collectives {sorted(unknown)}; known: {COLLECTIVES}")
    unknown = set(args.systems) - set(ALL_SYSTEMS)
    if unknown:
        p.error(f"unknown systems {sorted(unknown)}; known: {ALL_SYSTEMS}")
    args.size_list = [parse_bytes(s) for s in args.sizes.split(",")] if args.sizes else None
    if args.in_place:
        if args.netcluster or args.all or args.cpu_bound:
            p.error("--in-place is for one host (--local N)")
        os.environ["MPI_PERF_INPLACE"] = "1"  # mpi_perf reads it; local mpirun passes it on
    if args.cpu_bound and not args.size_list:
        args.size_list = [16 << 20, 64 << 20, 256 << 20]
    return args


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def main():
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    progress = open(out / "progress.log", "a")

    def log(line):
        print(line, file=sys.stderr, flush=True)
        print(line, file=progress, flush=True)

    # SIGTERM (a timeout, a kill) unwinds like Ctrl-C, so run_scenario's finally takes the
    # cluster down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.replot:
        replot(out)
        return
    failed = 0
    for spec in scenarios_from(args):
        try:
            print(run_scenario(args, spec, out, log), flush=True)
        except (subprocess.SubprocessError, OSError) as e:  # one scenario's failure spares the rest
            log(f"scenario {spec} failed: {e}")
            failed += 1
    if not (args.algos or args.ddp):  # the headline reads the collectives' tables
        (out / "headline.md").write_text(headline(out))
        print(headline(out))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
