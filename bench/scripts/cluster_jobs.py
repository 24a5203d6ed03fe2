#!/usr/bin/python3
"""coll's own programs as jobs on a simulated cluster of their own (netcluster, root), one
subcommand each; every one brings its cluster up and always down (SIGTERM included):

  cluster_jobs.py trainer [--hosts 4] [--rate 1gbit] [--mtu 1500] [--trace PREFIX]
                          [--program trainer_overlap|coll-train] [-- the program's options]
      build/bin/trainer_overlap (one all-reduce after backward against bucketed all-reduces
      overlapping it, in the same run on the same model), or coll-train, one rank per host;
      prints rank 0's output (docs/TRAINER.md)
  cluster_jobs.py pipeline [--rate 1gbit] [--batches "64 256 1024 4096 16384"] [--width 512]
                           [--layers 9] [--gflops 50] [--micro 16] [--steps 6] [--out FILE.csv]
      PipeDream's claim: the same model as D = 4 data parallelism and as a P = 4 pipeline (1F1B,
      GPipe) on 4 hosts x 1, per global batch: where the step times cross
  cluster_jobs.py doctor [--rounds 5] [--rate 1gbit] [--hosts 4] [--per-host 2]
      coll-doctor's time: every rank started to every rank exited, and rank 0's own figure

Ranks get torch-style variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR = host 0), as a
launcher-less job would; `cluster_jobs.py SUBCOMMAND --help` for each one's options."""
import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/, for compare_lib
from compare_lib.launch import kill_live  # noqa: E402
from compare_lib.netcluster import Netcluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Each subcommand's own cluster, so that two of them (or one and a test) never share one.
CLUSTERS = {"trainer": ("ntr", "10.77.0"), "pipeline": ("npd", "10.76.0"), "doctor": ("ndt", "10.214.30")}


class Job:
    """The cluster, a scratch folder and the next port (each host is its own namespace, so a
    fixed base cannot collide with another program's)."""

    def __init__(self, a, hosts, mtu=None):
        self.a, self.hosts = a, hosts
        self.cluster = Netcluster(hosts, a.rate, a.prefix, a.subnet, mtu)
        self.work = Path(tempfile.mkdtemp(prefix=f"coll-{a.command}."))
        self.port = 29700

    def __enter__(self):
        self.cluster.up()
        return self

    def __exit__(self, *exc):
        kill_live()
        self.cluster.down()
        shutil.rmtree(self.work, ignore_errors=True)

    def launch(self, args, per_host, timeout, fail_fast=True):
        self.port += 1
        return self.cluster.launch(args, self.hosts * per_host, per_host, self.port, timeout, self.work,
                                   secret=self.a.command, fail_fast=fail_fast)


def trainer(a):
    args = [str(Path(a.build) / "bin" / a.program)] + a.extra
    if a.trace:
        args += ["--trace", str(Path(a.trace).resolve())]
    with Job(a, a.hosts, a.mtu) as job:
        rc, text = job.launch(args, 1, 900)
    if rc != 0:
        sys.exit(f"{a.program} failed ({rc})\n{text}")
    print(f"# netcluster {a.hosts} hosts x 1 rank at {a.rate}, MTU {a.mtu}")
    print(text, end="")


def pipeline(a):
    """Layers are device-timed (--device-gflops): compute takes the time a device would, so
    the CPUs serve only the communication. The parameters (and so the gradients DP moves) stay
    the same while the activations the pipeline moves grow with the batch, so small batches
    favour the pipeline and large ones data parallelism."""
    params = (a.layers - 1) * (a.width * a.width + a.width) + a.width * 10 + 10
    print(f"# netcluster 4 hosts x 1 rank at {a.rate}; teacher task, {a.layers} dense layers of {a.width} "
          f"({params} parameters, {params * 4 // 1048576} MiB of gradients), device-timed at {a.gflops} GFLOP/s")
    print(f"# data parallel: D = 4, bucketed all-reduce overlapping backward; pipeline: P = 4, M = {a.micro}")
    print(f"{'batch':>8} {'act MiB/boundary':>16} {'dp ms':>12} {'1f1b ms':>12} {'gpipe ms':>12} {'best/dp':>10} faster")
    if a.out:
        Path(a.out).write_text("batch,activation_mib,dp_step_ms,1f1b_step_ms,gpipe_step_ms\n")
    with Job(a, 4) as job:
        for b in map(int, a.batches.split()):
            common = ["--task", "teacher", "--width", str(a.width), "--layers", str(a.layers), "--examples",
                      str(max(b * a.steps, 4096)), "--batch", str(b), "--epochs", "1", "--steps", str(a.steps),
                      "--device-gflops", str(a.gflops), "--optimizer", "sgd"]
            pp = ["--stages", "4", "--micro-batches", str(a.micro), "--schedule"]
            dp = step_ms(job, f"dp{b}", common)
            f1b = step_ms(job, f"1f1b{b}", common + pp + ["1f1b"])
            gpipe = step_ms(job, f"gpipe{b}", common + pp + ["gpipe"])
            act = f"{2 * b * a.width * 4 / 1048576:.2f}"  # forward + backward
            ratio = min(float(f1b), float(gpipe)) / float(dp)
            print(f"{b:>8} {act:>16} {dp:>12} {f1b:>12} {gpipe:>12} {ratio:>10.2f} "
                  f"{'pipeline' if ratio < 1 else 'data parallel'}", flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(f"{b},{act},{dp},{f1b},{gpipe}\n")


def step_ms(job, name, args):
    """coll-train on every host; rank 0's median step in ms (text, as printed)."""
    rc, text = job.launch([str(Path(job.a.build) / "bin/coll-train")] + args, 1, 600)
    found = re.search(r"median step ([0-9.]+) ms", text)
    if rc != 0 or not found:
        sys.exit(f"{name} failed ({rc})\n{text}")
    return found[1]


def doctor(a):
    """Started by hand on every host, no launcher; a rank's non-zero exit (a verdict) does not
    end the others, whose time is the point."""
    prog = str(Path(a.build) / "bin/coll-doctor")
    print(f"# coll-doctor on {a.hosts} hosts x {a.per_host} ranks at {a.rate}")
    print("# round  launch_s  rank0_s  verdict")
    with Job(a, a.hosts) as job:
        for k in range(1, a.rounds + 1):
            t0 = time.monotonic()
            _, text = job.launch([prog], a.per_host, 60, fail_fast=False)
            wall = time.monotonic() - t0
            rank0 = (job.work / "rank0.log").read_text() if (job.work / "rank0.log").exists() else text
            took = re.search(r"^\(.* checked in ([0-9.]+) s", rank0, re.M)
            verdict = re.search(r"^verdict: (.*)$", rank0, re.M)
            print(f"{k:>7}  {wall:8.2f}  {took[1] if took else '?':>7}  {verdict[1] if verdict else 'none'}", flush=True)
            if a.show:
                print(rank0, end="")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("trainer", help="trainer_overlap or coll-train, one rank per host")
    t.add_argument("--hosts", type=int, default=4)
    t.add_argument("--mtu", type=int, default=1500)
    t.add_argument("--trace", help="the program's --trace file prefix")
    t.add_argument("--program", choices=["trainer_overlap", "coll-train"], default="trainer_overlap")
    t.add_argument("extra", nargs=argparse.REMAINDER, help="after --: the program's options")
    pl = sub.add_parser("pipeline", help="pipeline parallelism against data parallelism", description=pipeline.__doc__)
    pl.add_argument("--batches", default="64 256 1024 4096 16384")
    pl.add_argument("--width", type=int, default=512)
    pl.add_argument("--layers", type=int, default=9)
    pl.add_argument("--gflops", type=float, default=50)
    pl.add_argument("--micro", type=int, default=16)
    pl.add_argument("--steps", type=int, default=6)
    pl.add_argument("--out", help="also a CSV")
    d = sub.add_parser("doctor", help="coll-doctor's time from launch to exit", description=doctor.__doc__)
    d.add_argument("--rounds", type=int, default=5)
    d.add_argument("--hosts", type=int, default=4)
    d.add_argument("--per-host", type=int, default=2)
    d.add_argument("--show", action="store_true", default=bool(os.environ.get("DOCTOR_SHOW")),
                   help="print rank 0's report too (or DOCTOR_SHOW=1)")
    for s in (t, pl, d):
        s.add_argument("--build", default=str(ROOT / "build"))
        s.add_argument("--rate", default="1gbit")
        s.add_argument("--prefix", help="netcluster host names (default: the subcommand's own)")
        s.add_argument("--subnet", help="netcluster subnet, A.B.C")
    a = p.parse_args(argv)
    prefix, subnet = CLUSTERS[a.command]
    a.prefix, a.subnet = a.prefix or prefix, a.subnet or subnet
    if a.command == "trainer":
        a.extra = a.extra[1:] if a.extra[:1] == ["--"] else a.extra
    if a.command == "pipeline" and a.out:
        a.out = str(Path(a.out).resolve())
    return a


def main(argv):
    a = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds: the cluster goes down
    try:
        {"trainer": trainer, "pipeline": pipeline, "doctor": doctor}[a.command](a)
    except OSError as e:  # no root, no netcluster: say so, no traceback
        sys.exit(f"cluster_jobs.py {a.command}: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
