#!/usr/bin/env python3
"""coll under several environments, interleaved, on netcluster: what a knob is worth.

Each round runs one job per environment (in the order given, one further on each round, so
none always goes first), each job timing every algorithm of one size side by side
(all_reduce_perf, broadcast_perf, all_gather_perf or reduce_scatter_perf -Q, out of place, -j rounds of -n ops after one untimed op
each, the median of the rounds). The table gives each algorithm's time per op in every round,
then the median over rounds.

    bench/scripts/env_ab.py --hosts 4 --per-host 1 --size 2M --env "" --env COLL_SOCKET_NSTREAMS=2
    bench/scripts/env_ab.py --hosts 2 --per-host 2 --size 64M --iters 3 --algos ring,hierarchical \\
        --env "" --env "COLL_SOCKET_NSTREAMS=2"

An environment is a space-separated list of NAME=VALUE ("" for none). Needs root (netcluster)."""
import argparse
import json
import signal
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare_lib.netcluster import Netcluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# collective: its perf program and the algorithms it times (hierarchical too with several ranks a host)
PROGRAMS = {"allreduce": ("all_reduce_perf", "ring,rhd,rd,direct,tree"), "broadcast": ("broadcast_perf", "chain,binomial,direct"),
            "allgather": ("all_gather_perf", "ring"), "reducescatter": ("reduce_scatter_perf", "ring")}


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--per-host", type=int, default=1)
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--size", default="2M")
    p.add_argument("--collective", choices=list(PROGRAMS), default="allreduce")
    p.add_argument("--algos", default=None, help="default: every algorithm of the collective")
    p.add_argument("--iters", type=int, default=10, help="timed ops per algorithm per job")
    p.add_argument("--job-rounds", type=int, default=2, help="-j: interleaved rounds inside each job (its median)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--env", action="append", required=True, help="one environment per flag")
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--prefix", default="eab")
    p.add_argument("--subnet", default="10.214.61")
    return p.parse_args(argv)


def environment(text):
    return dict(kv.split("=", 1) for kv in text.split())


def one_job(a, cluster, env, port, work):
    """{algorithm: ms per op} of one job."""
    hierarchical = ",hierarchical" if a.per_host > 1 else ""
    prog, algos = PROGRAMS[a.collective]
    algos += hierarchical if a.collective != "broadcast" else ""
    out = work / "perf.json"
    out.unlink(missing_ok=True)
    args = [str(Path(a.build) / "bin" / prog), "-b", a.size, "-e", a.size, "-n", str(a.iters), "-j", str(a.job_rounds),
            "-c", "0", "-Q", a.algos or algos, "-J", str(out)]
    rc, text = cluster.launch(args, a.hosts * a.per_host, a.per_host, port, 900, work, environment(env))
    if rc != 0 or not out.exists():
        raise RuntimeError(f"[{env}] exit {rc}\n{text[-3000:]}")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {r["algo"]: r["time_us"] / 1e3 for r in rows if not r["inplace"]}


def main(argv):
    a = parse(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    times = {e: {} for e in a.env}  # env -> algo -> [ms per round]
    work = Path(tempfile.mkdtemp(prefix="coll-env-ab."))
    port = 32100
    with Netcluster(a.hosts, a.rate, prefix=a.prefix, subnet=a.subnet) as cluster:
        for r in range(a.rounds):
            for k in range(len(a.env)):
                env = a.env[(k + r) % len(a.env)]
                port += 1
                for algo, ms in one_job(a, cluster, env, port, work).items():
                    times[env].setdefault(algo, []).append(ms)
    print(f"# netcluster {a.hosts} x {a.per_host} at {a.rate}, {a.collective} of {a.size}, {a.job_rounds} x {a.iters} ops "
          f"an algorithm a job, {a.rounds} interleaved rounds of jobs: ms per op in each round, then the median")
    algos = list(next(iter(times.values())))
    print("| environment | " + " | ".join(algos) + " |")
    print("|---|" + "---|" * len(algos))
    for env, by_algo in times.items():
        cells = [" ".join(f"{t:.1f}" for t in by_algo[x]) + f" (**{statistics.median(by_algo[x]):.1f}**)"
                 for x in algos]
        print(f"| {env or '(defaults)'} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
