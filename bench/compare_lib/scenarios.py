"""Launching every system in a scenario (one host, or netcluster) and measuring it, interleaved."""
import json
import os
import random
import re
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import *  # noqa: F401,F403
from .copy_floor import measure_copy_floor
from .launch import *  # noqa: F401,F403
from .netcluster import Netcluster
from .size_ceilings import size_kinds
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
        self.in_place_busbw = {}  # (coll system, size): the all-reduce's in-place (busbw, CPU-s/GB) each round
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
        if system in ("coll", "coll-ucx"):
            return os.access(self.coll_prog("all_reduce"), os.X_OK)
        if system == "coll-mem":  # its regions are read by ranks on the same host: one host, or several ranks a host
            return (isinstance(self, LocalScenario) or self.per_host > 1) and os.access(self.coll_prog("all_reduce"), os.X_OK)
        if system == "torch-coll":  # coll's torch backend: built with libtorch-dev, or pip-installed
            return torch_has_coll(self.args.torch_python, self.build)
        return True

    def coll_env(self, system):
        """coll-ucx: coll's ucx transport for every peer. Between simulated hosts UCX runs over
        TCP on eth0 only: its shared memory keys on the boot id, which every namespace shares,
        and would carry the bytes past the shaped links."""
        if system != "coll-ucx":
            return {}
        if isinstance(self, LocalScenario):
            return {"COLL_TRANSPORT": "ucx", "UCX_TLS": "sm,self"}
        return {"COLL_TRANSPORT": "ucx", "UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0"}

    def run_coll(self, collective, steps, timeout, system="coll"):
        """coll's nccl-tests program, one launch per size (its -n is one count for all
        sizes), -c 1 checks every element, -J gives the results as JSON lines; coll-mem: the
        buffers from collMemAlloc (-R 1); --blocking: -z 2, each op waited for, as the MPI
        calls and torch's wait."""
        rows = []
        for size, iters, warmup in steps:
            out_json = self.work / "coll.json"
            out_json.unlink(missing_ok=True)
            args = [self.coll_prog(collective), "-b", str(size), "-e", str(size), "-n", str(iters),
                    "-w", str(warmup), "-c", "1", "-J", str(out_json), "-R", "1" if system == "coll-mem" else "0"]
            if self.args.blocking:
                args += ["-z", "2"]
            rc, text = self.launch_coll(args, timeout, self.coll_env(system))
            # Broadcast in place: MPI_Bcast and gloo's broadcast have one buffer, and out of
            # place coll's root would also copy its input to its output.
            in_place = collective == "broadcast" or self.args.in_place
            got = json_rows(out_json, inplace=in_place) if out_json.exists() else []
            if collective == "all_reduce" and not in_place and out_json.exists():
                for row in json_rows(out_json, inplace=True):  # the same run's in-place cell, as torch's all_reduce is
                    self.in_place_busbw.setdefault((system, row.size), []).append((row.busbw, row.cpu_per_gb))
            outcome = finish(text, rc, got, f"{system} {collective} {size} B")
            if outcome.error:
                return Outcome(rows, outcome.error)
            rows += got
        return Outcome(rows)

    def run_mpi(self, system, collective, steps, timeout):
        args = [self.mpi_prog(system), MPI_OP[collective], "--plan", plan_text(steps), "1"]
        rc, text = self.launch_mpi(system, args, timeout)
        return finish(text, rc, table_rows(text), f"{system} {collective}")

    def run_torch(self, system, collective, steps, timeout):
        """torch.distributed through bench/peers/torch_dist_perf.py: backend gloo (a peer), or
        coll's own backend (torch-coll: what a torch user of coll gets, beside gloo)."""
        if self.args.in_place and collective in ("all_gather", "reduce_scatter"):
            return Outcome([], "unsupported")  # torch_dist_perf.py has no in-place form of these
        backend = "coll" if system == "torch-coll" else "gloo"
        args = [self.args.torch_python, str(ROOT / "bench/peers/torch_dist_perf.py"), "--op", collective,
                "--plan", plan_text(steps), "-c", "1", "--backend", backend]
        env = torch_env(self.args.torch_python, self.build, backend)
        rc, text = self.launch_ranks(args, timeout, env)
        return finish(text, rc, table_rows(text), f"{system} {collective}")

    def run(self, system, collective, steps, timeout):
        outcome = self.run_once(system, collective, steps, timeout)
        if outcome.error and "Address already in use" in outcome.error:
            outcome = self.run_once(system, collective, steps, timeout)  # a port race, not the system
        return outcome

    def run_once(self, system, collective, steps, timeout):
        if system in ("gloo", "torch-coll"):
            return self.run_torch(system, collective, steps, timeout)
        if system in COLL_SYSTEMS:
            return self.run_coll(collective, steps, timeout, system)
        return self.run_mpi(system, collective, steps, timeout)

    def tcp_floor(self, collectives):
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

    def launch_coll(self, args, timeout, extra_env=None):
        # Pinned (rank r on core r mod the cores), as collrun's default does on an idle machine
        # and Open MPI binds its own where they fit; unpinned, small-message times swing from
        # launch to launch. Given explicitly: the peers' runs must not make collrun unbind.
        return run_cmd([str(self.build / "bin/collrun"), "--bind-to", "core", "-n", str(self.n)] + args, timeout,
                       env=dict(os.environ, **(extra_env or {})))

    def launch_mpi(self, system, args, timeout):
        launcher = (["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"] if system == "openmpi"
                    else ["mpirun.mpich"])
        return run_cmd(launcher + ["-n", str(self.n)] + args, timeout)

    def launch_ranks(self, args, timeout, extra_env):
        """args as N ranks with torch-style environment, as torchrun would start them."""
        port = free_port()
        procs = []
        for rank in range(self.n):
            log = open(self.work / f"rank{rank}.log", "w+")
            procs.append((start(args, log, rank_env(rank, self.n, port, "127.0.0.1", "compare", rank, extra_env)),
                          log))
        return collect(procs, timeout)

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


class NetclusterScenario(Scenario):
    """H hosts x R ranks on the simulated cluster (network namespaces, tbf-shaped links).
    Rank k runs on host k // R. MPIs start their daemons in the namespaces through
    `netcluster rsh` and run mpirun on host 0."""

    def __init__(self, args, hosts, per_host, rate):
        super().__init__(args, hosts * per_host)
        self.hosts, self.per_host, self.rate = hosts, per_host, rate
        self.cluster = Netcluster(hosts, rate, args.prefix, args.subnet)
        # 1gbit keeps the name docs/PERFORMANCE.md's tables were written under
        self.name = f"net{hosts}x{per_host}" + ("" if rate == "1gbit" else f"_{rate}")
        self.title = f"netcluster, {hosts} hosts x {per_host} rank(s), {rate} links"
        self.sizes = (args.size_list or NET_SIZES) + ([256 << 20] if args.net_256m else [])
        self.agent = self.work / "rsh"
        self.agent.write_text(
            "#!/bin/bash\n# mpirun's ssh: skip ssh-style flags, map the address to its host\n"
            "while [[ $1 == -* ]]; do shift; done\nh=$1; shift\n"
            f'exec {NETCLUSTER} rsh {args.prefix}$(( ${{h##*.}} - 1 )) "$@"\n')
        self.agent.chmod(0o755)

    def available(self, system):
        """MPICH only on request: Debian's is ch4:ucx, whose shared memory joins the simulated
        hosts unless forced to TCP, and forced to TCP its 16 MiB all-reduce did not finish in
        100 s here."""
        return super().available(system) and (system != "mpich" or self.args.net_mpich)

    def up(self):
        self.cluster.up()

    def down(self):
        self.cluster.down()

    def addr(self, host):
        return self.cluster.addr(host)

    def in_host(self, host):
        return self.cluster.in_host(host)

    def launch_ranks(self, args, timeout, extra_env):
        return self.cluster.launch(args, self.n, self.per_host, self.next_port(), timeout, self.work, extra_env,
                                   "compare")

    def launch_coll(self, args, timeout, extra_env=None):
        return self.launch_ranks(args, timeout, extra_env or {})

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

    def tcp_floor(self, collectives):
        return measure_floor(self, collectives, size_kinds(self, collectives))

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
    systems = [s for s in ALL_SYSTEMS if s in scn.args.systems and scn.available(s)]
    for rnd in range(1, rounds + 1):
        m.loads.append(os.getloadavg()[0])
        limit = scn.limit()
        if limit:
            m.limits.append(limit)
        floor = scn.tcp_floor(collectives)
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
                log(f"[{scn.name}] round {rnd} {collective:14s} {system:10s} "
                    f"{time.monotonic() - started:6.1f} s  {status}")
        m.loads.append(os.getloadavg()[0])
    return m, systems


