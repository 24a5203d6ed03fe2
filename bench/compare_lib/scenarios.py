"""Launching every system in a scenario (one host, or netcluster) and measuring it, interleaved."""
import argparse
import csv
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import *  # noqa: F401,F403
from .copy_floor import measure_copy_floor
from .tcp_floor import measure_floor


@dataclass
class Result:
    """One system's measurement of one size in one round."""
    size: int
    time_us: float
    busbw: float
    wrong: int  # -1: not checked (never, here); > 0: the run is invalid
    cpu_per_gb: float = None  # CPU-seconds (user + system) of all ranks per GB of buffer


@dataclass
class Outcome:
    """A launch's results, or why there are none."""
    results: list = field(default_factory=list)
    error: str = ""


# ---------------------------------------------------------------- sizes and iteration counts

def plan(sizes, budget_bytes, max_iters, warmup=None):
    """(size, iters, warmup) per size: about budget_bytes per measurement, so 8 B gets many
    iterations (latency needs them) and 64 MiB a few (each takes long enough to time). Warm-up
    ops: a tenth of the timed ones unless given, the same for every system."""
    steps = []
    for s in sizes:
        iters = max(3, min(max_iters, budget_bytes // max(s, 1)))
        steps.append((s, iters, warmup if warmup is not None else max(1, iters // 10)))
    return steps


def plan_text(steps):
    return ",".join(f"{s}:{i}:{w}" for s, i, w in steps)


# ---------------------------------------------------------------- parsing peers' tables

def table_rows(text):
    """nccl-tests-style rows (size time algbw busbw #wrong) from a peer's output."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit():
            wrong = -1 if f[4] == "N/A" else int(f[4])
            cpu = float(f[7]) if len(f) >= 8 else None
            rows.append(Result(int(f[0]), float(f[1]), float(f[3]), wrong, cpu))
    return rows


def json_rows(path, inplace=False):
    """coll's -J lines: the out-of-place (or in-place) cell of each size."""
    rows = []
    for line in Path(path).read_text().splitlines():
        d = json.loads(line)
        if d["inplace"] == inplace:
            rows.append(Result(d["size"], d["time_us"], d["busbw"],
                               -1 if d["wrong"] is None else d["wrong"], d.get("cpu_s_per_gb")))
    return rows


def finish(proc_out, rc, rows, what):
    if rc != 0:
        tail = "\n".join(proc_out.splitlines()[-15:])
        port_taken = " (Address already in use)" if "Address already in use" in proc_out else ""
        return Outcome(rows, f"{what}: exit {rc}{port_taken}\n{tail}")
    if not rows and "# unsupported" in proc_out:
        return Outcome([], "unsupported")
    if not rows:
        return Outcome([], f"{what}: no rows\n{proc_out[-2000:]}")
    return Outcome(rows)


# ---------------------------------------------------------------- scenarios

class Scenario:
    """Where ranks run and how each system is launched there."""

    def __init__(self, args, ranks):
        self.args, self.n = args, ranks
        self.build = Path(args.build)
        self.work = Path(tempfile.mkdtemp(prefix="coll-compare."))
        self.port = random.randint(20000, 30000)  # netcluster: each host's own namespace

    def next_port(self):
        self.port += 1
        return self.port

    def coll_prog(self, collective):
        return str(self.build / "bin" / f"{collective}_perf")

    def mpi_prog(self, system):
        return str(self.build / "peers" / f"mpi_perf_{system}")

    def available(self, system):
        if system in ("openmpi", "mpich"):
            return os.access(self.mpi_prog(system), os.X_OK)
        if system == "coll":
            return os.access(self.coll_prog("all_reduce"), os.X_OK)
        if system == "coll-mem":  # its regions are read by ranks on the same host
            return isinstance(self, LocalScenario) and os.access(self.coll_prog("all_reduce"), os.X_OK)
        return True

    def run_coll(self, collective, steps, timeout, library_memory=False):
        """coll's nccl-tests program, one launch per size (its -n is one count for all
        sizes), -c 1 checks every element, -J gives the results as JSON lines; library_memory:
        the buffers from collMemAlloc (-R 1)."""
        rows = []
        for size, iters, warmup in steps:
            out_json = self.work / "coll.json"
            out_json.unlink(missing_ok=True)
            args = [self.coll_prog(collective), "-b", str(size), "-e", str(size), "-n", str(iters),
                    "-w", str(warmup), "-c", "1", "-J", str(out_json), "-R", "1" if library_memory else "0"]
            rc, text = self.launch_coll(args, timeout)
            # Broadcast in place: MPI_Bcast and gloo's broadcast have one buffer, and out of
            # place coll's root would also copy its input to its output.
            in_place = collective == "broadcast" or self.args.in_place
            got = json_rows(out_json, inplace=in_place) if out_json.exists() else []
            outcome = finish(text, rc, got, f"{'coll-mem' if library_memory else 'coll'} {collective} {size} B")
            if outcome.error:
                return Outcome(rows, outcome.error)
            rows += got
        return Outcome(rows)

    def run_mpi(self, system, collective, steps, timeout):
        args = [self.mpi_prog(system), MPI_OP[collective], "--plan", plan_text(steps), "1"]
        rc, text = self.launch_mpi(system, args, timeout)
        return finish(text, rc, table_rows(text), f"{system} {collective}")

    def run_gloo(self, collective, steps, timeout):
        if self.args.in_place and collective in ("all_gather", "reduce_scatter"):
            return Outcome([], "unsupported")  # torch_dist_perf.py has no in-place form of these
        args = ["/usr/bin/python3", str(ROOT / "bench/peers/torch_dist_perf.py"), "--op", collective,
                "--plan", plan_text(steps), "-c", "1"]
        rc, text = self.launch_ranks(args, timeout, {})
        return finish(text, rc, table_rows(text), f"gloo {collective}")

    def run(self, system, collective, steps, timeout):
        outcome = self.run_once(system, collective, steps, timeout)
        if outcome.error and "Address already in use" in outcome.error:
            outcome = self.run_once(system, collective, steps, timeout)  # a port race, not the system
        return outcome

    def run_once(self, system, collective, steps, timeout):
        if system in COLL_SYSTEMS:
            return self.run_coll(collective, steps, timeout, library_memory=system == "coll-mem")
        if system == "gloo":
            return self.run_gloo(collective, steps, timeout)
        return self.run_mpi(system, collective, steps, timeout)

    def rank_env(self, rank, port, addr):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(self.n), MASTER_ADDR=addr,
                   MASTER_PORT=str(port), COLL_JOB_SECRET=f"compare-{port}")
        env.pop("OMPI_COMM_WORLD_RANK", None)
        return env

    def tcp_floor(self):
        return None  # one host: memcpy is the limit

    def copy_floor(self, collectives):
        return None  # where hosts are simulated, the network is the limit

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)


class LocalScenario(Scenario):
    """N ranks on this host: collrun for coll, each MPI's own mpirun, torch-style env for gloo."""

    def __init__(self, args, ranks):
        super().__init__(args, ranks)
        self.name = f"local{ranks}" + ("_inplace" if args.in_place else "")
        self.title = f"one host, {ranks} ranks" + (", in place" if args.in_place else "")
        self.sizes = args.size_list or LOCAL_SIZES

    def launch_coll(self, args, timeout):
        # Pinned where the ranks fit the cores, as Open MPI binds its own by default (to cores,
        # for 2 ranks); unpinned, 2 ranks' small-message times swing from launch to launch.
        bind = "core" if self.n <= (os.cpu_count() or 1) else "none"
        return run_cmd([str(self.build / "bin/collrun"), "--bind-to", bind, "-n", str(self.n)] + args, timeout)

    def launch_mpi(self, system, args, timeout):
        launcher = (["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"] if system == "openmpi"
                    else ["mpirun.mpich"])
        return run_cmd(launcher + ["-n", str(self.n)] + args, timeout)

    def launch_ranks(self, args, timeout, extra_env):
        port = free_port()
        procs = [self.spawn(args, rank, port, extra_env) for rank in range(self.n)]
        return collect(procs, timeout)

    def spawn(self, args, rank, port, extra_env):
        env = dict(self.rank_env(rank, port, "127.0.0.1"), **extra_env)
        log = open(self.work / f"rank{rank}.log", "w+")
        return start(args, log, env), log

    def limit(self):
        """memcpy bandwidth with 2 threads (this machine's cores), GB/s: what all ranks on
        one host share. Measured each round, in the run, because the machine is shared."""
        rc, text = run_cmd([str(self.build / "bin/memory_bandwidth"), "64M", "3"], 120)
        found = re.findall(r"threads (\d+)\s+([0-9.]+) GB/s", text)
        return max(float(gbs) for _, gbs in found) if rc == 0 and found else None

    limit_label = "memcpy (best of 1 and 2 threads)"

    def copy_floor(self, collectives):
        return measure_copy_floor(self, collectives)

    def ceiling(self, limit):
        return None  # in-cache sizes legitimately beat memcpy of 64 MiB


LIVE = set()  # rank processes in flight (each in its own session): killed if we are


def start(args, log, env):
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    LIVE.add(proc)
    return proc


def kill_live():
    for proc in list(LIVE):
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    LIVE.clear()


def free_port():
    """A port no socket on this host holds now: the kernel's choice, released for rank 0's
    store to take (a fixed range would collide with other jobs' and ephemeral ports)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def collect(procs, timeout):
    """Waits for every rank; the first rank to fail, or the deadline, ends them all (a rank
    whose peer died would otherwise wait out torch's or coll's own long timeouts). Returns
    rank 0's output, or every rank's on failure."""
    deadline, rc = time.monotonic() + timeout, 0
    while rc == 0 and any(p.poll() is None for p, _ in procs):
        if time.monotonic() > deadline:
            rc = 124
        time.sleep(0.05)
        rc = rc or next((p.returncode for p, _ in procs if p.returncode), 0)
    for p, _ in procs:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
        LIVE.discard(p)
    texts = []
    for p, log in procs:
        log.seek(0)
        texts.append(log.read())
        log.close()
    return rc, texts[0] if rc == 0 else "\n".join(texts)


class NetclusterScenario(Scenario):
    """H hosts x R ranks on the simulated cluster (network namespaces, tbf-shaped links).
    Rank k runs on host k // R. MPIs start their daemons in the namespaces through
    `netcluster rsh` and run mpirun on host 0."""

    def __init__(self, args, hosts, per_host, rate):
        super().__init__(args, hosts * per_host)
        self.hosts, self.per_host, self.rate = hosts, per_host, rate
        # 1gbit keeps the name docs/PERFORMANCE.md's tables were written under
        self.name = f"net{hosts}x{per_host}" + ("" if rate == "1gbit" else f"_{rate}")
        self.title = f"netcluster, {hosts} hosts x {per_host} rank(s), {rate} links"
        self.sizes = (args.size_list or NET_SIZES) + ([256 << 20] if args.net_256m else [])
        self.agent = self.work / "rsh"
        self.agent.write_text(
            "#!/bin/bash\n# mpirun's ssh: skip ssh-style flags, map the address to its host\n"
            "while [[ $1 == -* ]]; do shift; done\nh=$1; shift\n"
            f'exec {NETCLUSTER} rsh {NC_PREFIX}$(( ${{h##*.}} - 1 )) "$@"\n')
        self.agent.chmod(0o755)

    def available(self, system):
        """MPICH only on request: Debian's is ch4:ucx, whose shared memory joins the simulated
        hosts unless forced to TCP, and forced to TCP its 16 MiB all-reduce did not finish in
        100 s here."""
        return super().available(system) and (system != "mpich" or self.args.net_mpich)

    def up(self):
        subprocess.run([str(NETCLUSTER), "up", str(self.hosts), "--rate", self.rate, "--prefix", NC_PREFIX,
                        "--subnet", NC_SUBNET], check=True, stdout=subprocess.DEVNULL, timeout=120)

    def down(self):
        subprocess.run([str(NETCLUSTER), "down", "--prefix", NC_PREFIX], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)

    def addr(self, host):
        return f"{NC_SUBNET}.{host + 1}"

    def in_host(self, host):
        return [str(NETCLUSTER), "exec", f"{NC_PREFIX}{host}", "--"]

    def launch_ranks(self, args, timeout, extra_env):
        port = self.next_port()
        procs = []
        for rank in range(self.n):
            env = dict(self.rank_env(rank, port, self.addr(0)), LOCAL_RANK=str(rank % self.per_host),
                       **extra_env)
            log = open(self.work / f"rank{rank}.log", "w+")
            procs.append((start(self.in_host(rank // self.per_host) + args, log, env), log))
        return collect(procs, timeout)

    def launch_coll(self, args, timeout):
        return self.launch_ranks(args, timeout, {})

    def launch_mpi(self, system, args, timeout):
        if system == "openmpi":
            hostfile = self.work / "hosts.openmpi"
            hostfile.write_text("".join(f"{self.addr(h)} slots={self.per_host}\n" for h in range(self.hosts)))
            # ob1 over TCP between hosts and vader inside one; never UCX (see MPICH below)
            launcher = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                        "--mca", "pml", "ob1",
                        "-n", str(self.n), "--hostfile", str(hostfile), "--mca", "plm_rsh_agent",
                        str(self.agent), "--mca", "btl", "tcp,self,vader", "--mca", "btl_tcp_if_include",
                        "eth0", "--mca", "oob_tcp_if_include", "eth0"]
        else:
            hosts = ",".join(f"{self.addr(h)}:{self.per_host}" for h in range(self.hosts))
            # ch4:ucx; UCX's shared memory keys on boot-id and would join the namespaces
            # (netcluster's notes): TCP on eth0 between hosts (MPICH's own shm stays within one).
            launcher = ["mpirun.mpich", "-launcher", "ssh", "-launcher-exec", str(self.agent),
                        "-hosts", hosts, "-iface", "eth0", "-genv", "UCX_TLS", "tcp,self",
                        "-genv", "UCX_NET_DEVICES", "eth0", "-n", str(self.n)]
        return run_cmd(self.in_host(0) + launcher + args, timeout)

    def limit(self):
        """The link rate in GB/s: each host's upload and download are shaped to it."""
        m = re.fullmatch(r"([0-9.]+)([kmg])bit", self.rate)
        return float(m[1]) * {"k": 1e3, "m": 1e6, "g": 1e9}[m[2]] / 8e9 if m else None

    limit_label = "link rate"

    def tcp_floor(self):
        return measure_floor(self)

    def ceiling(self, limit):
        """The most busbw any algorithm can reach (5 % for measurement noise): the link rate,
        1.5 x with 2 or more ranks per host (each host's data crosses its link once)."""
        return limit and limit * (1.5 if self.per_host > 1 else 1.0) * 1.05


# ---------------------------------------------------------------- measuring

class Measurements:
    """Every round's results, keyed by (collective, system, size), plus errors and context."""

    def __init__(self):
        self.busbw, self.time_us, self.cpu, self.errors = {}, {}, {}, {}
        self.limits, self.loads, self.raw = [], [], []
        self.floors = []  # per round, where the CPUs may decide: bare TCP streams' rates (tcp_floor.py)
        self.copy_floors = []  # per round, one host: bare copies of the all-gather (copy_floor.py)

    def add(self, rnd, collective, system, outcome, n, load):
        """Records outcome; busbw is recomputed from size and time (peers print it rounded
        to 3 decimals, which is 0 at 8 B), the same formula for every system."""
        if outcome.error:
            self.errors.setdefault((collective, system), []).append(f"round {rnd}: {outcome.error}")
        for r in outcome.results:
            r.busbw = r.size / (r.time_us * 1e3) * bus_factor(collective, n) if r.time_us > 0 else 0.0
            ok = r.wrong == 0
            cpu = "" if r.cpu_per_gb is None else f"{r.cpu_per_gb:.4g}"
            self.raw.append([rnd, collective, system, r.size, f"{r.time_us:.3f}", f"{r.busbw:.6g}",
                             r.wrong, "ok" if ok else "WRONG", f"{load:.2f}", cpu])
            if not ok:
                self.errors.setdefault((collective, system), []).append(
                    f"round {rnd}: {r.wrong} wrong elements at {r.size} B")
                continue
            self.busbw.setdefault((collective, system, r.size), []).append(r.busbw)
            self.time_us.setdefault((collective, system, r.size), []).append(r.time_us)
            if r.cpu_per_gb is not None:
                self.cpu.setdefault((collective, system, r.size), []).append(r.cpu_per_gb)

    def median(self, table, collective, system, size):
        values = table.get((collective, system, size))
        return statistics.median(values) if values else None


def measure(scn, collectives, rounds, log):
    """Rounds of (collective x system), the system order rotating each round so that no system
    always runs first (or right after the heaviest one) on a shared, loaded machine."""
    m = Measurements()
    systems = [s for s in SYSTEMS if s in scn.args.systems and scn.available(s)]
    for rnd in range(1, rounds + 1):
        m.loads.append(os.getloadavg()[0])
        limit = scn.limit()
        if limit:
            m.limits.append(limit)
        floor = scn.tcp_floor()
        if floor:
            m.floors.append(floor)
        copy_floor = scn.copy_floor(collectives)
        if copy_floor:
            m.copy_floors.append(copy_floor)
        for collective in collectives:
            steps = plan([effective_size(collective, s, scn.n) for s in scn.sizes],
                         scn.args.budget, scn.args.max_iters, scn.args.warmup)
            order = systems[(rnd - 1) % len(systems):] + systems[:(rnd - 1) % len(systems)]
            for system in order:
                started, load = time.monotonic(), os.getloadavg()[0]
                outcome = scn.run(system, collective, steps, scn.args.timeout)
                m.add(rnd, collective, system, outcome, scn.n, load)
                status = "ok" if not outcome.error else outcome.error.splitlines()[0]
                log(f"[{scn.name}] round {rnd} {collective:14s} {system:8s} "
                    f"{time.monotonic() - started:6.1f} s  {status}")
        m.loads.append(os.getloadavg()[0])
    return m, systems


