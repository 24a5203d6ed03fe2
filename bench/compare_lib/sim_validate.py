"""coll-sim against the real thing (sim.py validate, issue 27): on a simulated cluster
(netcluster), every all-reduce and broadcast algorithm timed over a size sweep, then coll-sim on
the topology that same measurement probed and dumped (COLL_TOPO_DUMP_FILE), with netcluster's
token bucket (tbf, 128 KB burst); then sim_report.compare side by side.

Each size is one job per collective that times every algorithm side by side (the perf programs'
-Q): --rounds interleaved rounds for the small sizes, the median of each reported; one round for
the large ones, which repeat within a few percent (docs/SIMULATOR.md). --launches K: each small
size's jobs K times, the median over the launches recorded (below 64 KiB a job's time depends
on where the kernel put its threads, more than on its rounds), and as topology the probe of the
launch whose loaded step is the median of all. --sim-only: no measurement; simulate again
against the files already in --out.

Files under --out, <tag> = <H>x<R>_<rate>: measured_<tag>.csv, method_<tag>.txt,
topology_<tag>.json, wmem_max_<tag>.txt, sim_<tag>.csv."""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import types
from pathlib import Path

from .launch import kill_live
from .netcluster import Netcluster
from .sim_report import compare

PREFIX, SUBNET = "simv", "10.214.21"  # this program's own cluster
BURST = "128K"  # netcluster's tbf burst


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def add_args(p):
    p.add_argument("--build", default=str(Path(__file__).resolve().parents[2] / "build"))
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--per-host", type=int, default=1)
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "build/sim_validate"))
    p.add_argument("--small", default="8 32 128 512 2K 8K 32K 128K 512K", help="sizes below 1 MiB: --rounds rounds")
    p.add_argument("--large", default="2M 8M 32M 128M 256M", help="sizes from 1 MiB: one round of 3 ops")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=40, help="ops per round below 32 KiB")
    p.add_argument("--launches", type=int, default=1, help="jobs per small size, the median recorded")
    p.add_argument("--sim-only", action="store_true", help="no measurement: simulate against --out's files")
    p.add_argument("--sim-flags", default=os.environ.get("SIM_FLAGS", ""),
                   help="more coll-sim flags, for what-ifs (default: $SIM_FLAGS)")
    p.add_argument("--prefix", default=PREFIX)
    p.add_argument("--subnet", default=SUBNET)


def ops_for(a, size):
    """Ops per round: large messages take seconds at 1 Gbit/s, so 3 and one round there; below
    32 KiB an op takes tens of µs and a few scheduler hiccups move a mean of 40: --iters."""
    b = parse_bytes(size)
    return a.iters if b < 32768 else 40 if b < 1 << 20 else 3


def count_flags(a, size):
    n = ops_for(a, size)
    return ["-n", "3", "-j", "1"] if n == 3 else ["-n", str(n), "-j", str(a.rounds)]


class Measurement:
    def __init__(self, a, cluster, work):
        self.a, self.cluster, self.work = a, cluster, work
        self.times, self.dumps, self.port = {}, [], 30100

    def run(self, prog, collective, algos, size):
        """One job timing every algorithm of one size (-Q), its topology probe dumped."""
        a = self.a
        self.port += 1
        dump = self.work / f"topology.{len(self.dumps)}.json"
        out_json = self.work / "perf.json"
        out_json.unlink(missing_ok=True)
        args = [str(Path(a.build) / "bin" / prog), "-b", size, "-e", size] + count_flags(a, size) + \
               ["-c", "0", "-Q", algos, "-J", str(out_json)]
        rundir = self.work / "ranks"
        rundir.mkdir(exist_ok=True)
        rc, text = self.cluster.launch(args, a.hosts * a.per_host, a.per_host, self.port, 900, rundir,
                                       {"COLL_TOPO_DUMP_FILE": str(dump)}, "simv")
        if rc != 0 or not out_json.exists():
            raise RuntimeError(f"run failed ({collective} {size}): exit {rc}\n{text[-3000:]}")
        self.dumps.append(dump)
        for line in out_json.read_text().splitlines():
            d = json.loads(line)
            if not d["inplace"]:
                self.times.setdefault((collective, d["algo"], d["size"]), []).append(d["time_us"])

    def write(self, measured, topology):
        with open(measured, "a") as f:
            for (c, algo, b), v in self.times.items():
                f.write(f"{c},{algo},{b},{statistics.median(v):.2f}\n")
        probes = sorted((p for p in self.dumps if p.exists()),
                        key=lambda p: json.loads(p.read_text())["links"].get("loaded_step_us", 0))
        shutil.copy(probes[len(probes) // 2], topology)


def measure(a, out, tag, work):
    allreduce_algos = "ring direct tree rhd rd" + (" hierarchical" if a.per_host > 1 else "")
    with Netcluster(a.hosts, a.rate, a.prefix, a.subnet) as cluster:
        m = Measurement(a, cluster, work)
        (out / f"measured_{tag}.csv").write_text("collective,algorithm,bytes,measured_us\n")
        (out / f"method_{tag}.txt").write_text(
            f"perf programs' -Q, {a.rounds} interleaved rounds below 1 MiB ({a.iters} ops below 32 KiB, 40 from "
            f"there; the median of {a.launches} launches), one round of 3 ops above\n")
        for size in a.small.split() + a.large.split():
            for _ in range(a.launches if parse_bytes(size) < 1 << 20 else 1):
                m.run("all_reduce_perf", "allreduce", allreduce_algos, size)
                m.run("broadcast_perf", "broadcast", "chain direct binomial", size)
            print(f"{tag}: {size} done", flush=True)
        m.write(out / f"measured_{tag}.csv", out / f"topology_{tag}.json")
    (out / f"wmem_max_{tag}.txt").write_text(Path("/proc/sys/net/core/wmem_max").read_text())


def send_buffer(rate, wmem_max):
    """What a sender may leave queued: the buffers of the sockets it sends to its peer on and
    the 20 ms of traffic netcluster's tbf queues ("latency 20ms"). Linux grants a socket twice
    what coll asks (COLL_SOCKET_BUFFER, 4 MiB) up to twice net.core.wmem_max, which the
    measurement records (sets measured before it did: 212992, Linux's default). coll stripes
    over its two streams a peer only where the link carries 0.5 GB/s or more, one below
    (transport/socket/transport.cc)."""
    unit = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[rate[-4:]]
    link_Bps = float(rate[:-4]) * unit / 8
    sock = 2 * min(4 << 20, wmem_max)
    return int((2 if link_Bps >= 0.5e9 else 1) * sock + link_Bps * 0.020)


def simulate(a, out, tag, work):
    """coll-sim on the probed topology at the rate netcluster shapes to (the probe's β runs a few
    percent high), as many ops as the measurement times, from idle links (all_reduce_perf times
    its ops after a barrier, so its warm-up leaves no backlog and the token bucket refills)."""
    wmem = out / f"wmem_max_{tag}.txt"
    wmem_max = int(wmem.read_text()) if wmem.exists() else 212992
    sim = [str(Path(a.build) / "bin/coll-sim"), "--topology", str(out / f"topology_{tag}.json"), "--link", a.rate,
           "--burst", BURST, "--send-buffer", str(send_buffer(a.rate, wmem_max)), "--algo", "all"] + a.sim_flags.split()
    result = out / f"sim_{tag}.csv"
    result.unlink(missing_ok=True)
    for size in a.small.split() + a.large.split():
        parts = []
        for collective in ("allreduce", "broadcast"):
            csv = work / f"{collective}.csv"
            subprocess.run(sim + ["-n", str(ops_for(a, size)), "-w", "0", "-c", collective, "-b", size, "-e", size,
                                  "--csv", str(csv)], check=True, stdout=subprocess.DEVNULL)
            parts.append(csv.read_text().splitlines(keepends=True))
        if not result.exists():
            result.write_text(parts[0][0])
        with open(result, "a") as f:
            f.writelines(parts[0][1:] + parts[1][1:])


def validate(a):
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = f"{a.hosts}x{a.per_host}_{a.rate}"
    work = Path(tempfile.mkdtemp(prefix="coll-simv."))
    try:
        if not a.sim_only:
            measure(a, out, tag, work)
        simulate(a, out, tag, work)
    finally:
        kill_live()
        shutil.rmtree(work, ignore_errors=True)
    compare(types.SimpleNamespace(measured=str(out / f"measured_{tag}.csv"), sim=str(out / f"sim_{tag}.csv"),
                                  title=f"netcluster {a.hosts} hosts x {a.per_host} ranks at {a.rate}",
                                  tolerance=0.15, markdown=False))
