#!/usr/bin/python3
"""coll beside Open MPI, MPICH and torch.distributed gloo: the same collectives, the same
sizes, in the same run, interleaved, several rounds, medians, every result checked.

  bench/compare.py --local 4                                   one host, 4 ranks
  bench/compare.py --netcluster 4 --per-host 1 --rate 1gbit    simulated cluster (root)
  bench/compare.py --all                                       the four scenarios of docs/PERFORMANCE.md

Per scenario it prints one table per collective (size, each system's median busbw, coll's
ratio to the best peer) and writes, under --out, <scenario>.txt (the tables), <scenario>.csv
(every measurement of every system and round), <scenario>_<collective>.csv (medians) and
<scenario>_<collective>.png (busbw against size, log axes, the physical limit as a line:
the link rate on netcluster, memcpy bandwidth measured in the same run on one host).

busbw follows nccl-tests: algbw = size / time (size: the whole buffer, i.e. all-gather's
output and reduce-scatter's input), busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for
all-gather and reduce-scatter, x 1 for broadcast. Times are out-of-place, mean over ranks.
"""
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

ROOT = Path(__file__).resolve().parent.parent
NETCLUSTER = Path(os.environ.get("NETCLUSTER", ROOT.parent / "shared/tools/netcluster"))
NC_PREFIX, NC_SUBNET = "ncb", "10.214.19"  # this script's own cluster: no clash with others

COLLECTIVES = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]
SYSTEMS = ["coll", "openmpi", "mpich", "gloo"]
COLORS = {"coll": "tab:red", "openmpi": "tab:blue", "mpich": "tab:green", "gloo": "tab:orange"}
MPI_OP = {"all_reduce": "allreduce", "broadcast": "broadcast", "all_gather": "allgather",
          "reduce_scatter": "reduce_scatter"}
LOCAL_SIZES = [8, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
NET_SIZES = LOCAL_SIZES


@dataclass
class Result:
    """One system's measurement of one size in one round."""
    size: int
    time_us: float
    busbw: float
    wrong: int  # -1: not checked (never, here); > 0: the run is invalid


@dataclass
class Outcome:
    """A launch's results, or why there are none."""
    results: list = field(default_factory=list)
    error: str = ""


# ---------------------------------------------------------------- sizes and iteration counts

def bus_factor(collective, n):
    """nccl-tests' busbw / algbw: the bytes each rank's link carries per byte of the buffer."""
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    return 1.0 if collective == "broadcast" else (n - 1) / n


def effective_size(collective, size, n):
    """All-gather and reduce-scatter need at least one float per rank; sizes round down to
    whole per-rank chunks, as nccl-tests' do."""
    if collective in ("all_gather", "reduce_scatter"):
        per_rank = max(1, size // 4 // n)
        return per_rank * n * 4
    return max(4, size // 4 * 4)


def plan(sizes, budget_bytes, max_iters):
    """(size, iters, warmup) per size: about budget_bytes per measurement, so 8 B gets many
    iterations (latency needs them) and 64 MiB a few (each takes long enough to time)."""
    steps = []
    for s in sizes:
        iters = max(3, min(max_iters, budget_bytes // max(s, 1)))
        steps.append((s, iters, max(1, iters // 10)))
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
            rows.append(Result(int(f[0]), float(f[1]), float(f[3]), wrong))
    return rows


def json_rows(path):
    """coll's -J lines: the out-of-place cell of each size."""
    rows = []
    for line in Path(path).read_text().splitlines():
        d = json.loads(line)
        if not d["inplace"]:
            rows.append(Result(d["size"], d["time_us"], d["busbw"],
                               -1 if d["wrong"] is None else d["wrong"]))
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


def run_cmd(cmd, timeout, env=None):
    """(rc, stdout+stderr) of cmd; rc 124 after timeout (its process group killed)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env, start_new_session=True)
        return p.returncode, p.stdout
    except FileNotFoundError as e:
        return 127, f"# {e}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out + f"\n# timed out after {timeout} s"


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
        return True

    def run_coll(self, collective, steps, timeout):
        """coll's nccl-tests program, one launch per size (its -n is one count for all
        sizes), -c 1 checks every element, -J gives the results as JSON lines."""
        rows = []
        for size, iters, warmup in steps:
            out_json = self.work / "coll.json"
            out_json.unlink(missing_ok=True)
            args = [self.coll_prog(collective), "-b", str(size), "-e", str(size), "-n", str(iters),
                    "-w", str(warmup), "-c", "1", "-J", str(out_json)]
            rc, text = self.launch_coll(args, timeout)
            got = json_rows(out_json) if out_json.exists() else []
            outcome = finish(text, rc, got, f"coll {collective} {size} B")
            if outcome.error:
                return Outcome(rows, outcome.error)
            rows += got
        return Outcome(rows)

    def run_mpi(self, system, collective, steps, timeout):
        args = [self.mpi_prog(system), MPI_OP[collective], "--plan", plan_text(steps), "1"]
        rc, text = self.launch_mpi(system, args, timeout)
        return finish(text, rc, table_rows(text), f"{system} {collective}")

    def run_gloo(self, collective, steps, timeout):
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
        if system == "coll":
            return self.run_coll(collective, steps, timeout)
        if system == "gloo":
            return self.run_gloo(collective, steps, timeout)
        return self.run_mpi(system, collective, steps, timeout)

    def rank_env(self, rank, port, addr):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(self.n), MASTER_ADDR=addr,
                   MASTER_PORT=str(port), COLL_JOB_SECRET=f"compare-{port}")
        env.pop("OMPI_COMM_WORLD_RANK", None)
        return env

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)


class LocalScenario(Scenario):
    """N ranks on this host: collrun for coll, each MPI's own mpirun, torch-style env for gloo."""

    def __init__(self, args, ranks):
        super().__init__(args, ranks)
        self.name = f"local{ranks}"
        self.title = f"one host, {ranks} ranks"
        self.sizes = LOCAL_SIZES

    def launch_coll(self, args, timeout):
        return run_cmd([str(self.build / "bin/collrun"), "-n", str(self.n)] + args, timeout)

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
        self.name = f"net{hosts}x{per_host}"
        self.title = f"netcluster, {hosts} hosts x {per_host} rank(s), {rate} links"
        self.sizes = NET_SIZES + ([256 << 20] if args.net_256m else [])
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

    def ceiling(self, limit):
        """The most busbw any algorithm can reach (5 % for measurement noise): the link rate,
        1.5 x with 2 or more ranks per host (each host's data crosses its link once)."""
        return limit and limit * (1.5 if self.per_host > 1 else 1.0) * 1.05


# ---------------------------------------------------------------- measuring

class Measurements:
    """Every round's results, keyed by (collective, system, size), plus errors and context."""

    def __init__(self):
        self.busbw, self.time_us, self.errors = {}, {}, {}
        self.limits, self.loads, self.raw = [], [], []

    def add(self, rnd, collective, system, outcome, n, load):
        """Records outcome; busbw is recomputed from size and time (peers print it rounded
        to 3 decimals, which is 0 at 8 B), the same formula for every system."""
        if outcome.error:
            self.errors.setdefault((collective, system), []).append(f"round {rnd}: {outcome.error}")
        for r in outcome.results:
            r.busbw = r.size / (r.time_us * 1e3) * bus_factor(collective, n) if r.time_us > 0 else 0.0
            ok = r.wrong == 0
            self.raw.append([rnd, collective, system, r.size, f"{r.time_us:.3f}", f"{r.busbw:.6g}",
                             r.wrong, "ok" if ok else "WRONG", f"{load:.2f}"])
            if not ok:
                self.errors.setdefault((collective, system), []).append(
                    f"round {rnd}: {r.wrong} wrong elements at {r.size} B")
                continue
            self.busbw.setdefault((collective, system, r.size), []).append(r.busbw)
            self.time_us.setdefault((collective, system, r.size), []).append(r.time_us)

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
        for collective in collectives:
            steps = plan([effective_size(collective, s, scn.n) for s in scn.sizes],
                         scn.args.budget, scn.args.max_iters)
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


# ---------------------------------------------------------------- reporting

def human_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def cell(v):
    return "-" if v is None else f"{v:.4g}"


def unsupported(m, collective, system):
    return any(e.endswith("unsupported") for e in m.errors.get((collective, system), []))


def summary_rows(m, collective, systems, sizes):
    """Per size: each system's median busbw and time, the best peer, coll's ratio to it."""
    rows = []
    for size in sizes:
        bw = {s: m.median(m.busbw, collective, s, size) for s in systems}
        us = {s: m.median(m.time_us, collective, s, size) for s in systems}
        peers = {s: v for s, v in bw.items() if s != "coll" and v is not None}
        best = max(peers, key=peers.get) if peers else None
        ratio = bw["coll"] / peers[best] if best and peers[best] > 0 and bw.get("coll") else None
        rows.append({"size": size, "busbw": bw, "time_us": us, "best": best, "ratio": ratio})
    return rows


def table_text(scn, m, collective, systems, rows):
    head = f"{'size':>10} " + " ".join(f"{s:>10}" for s in systems) + f" {'coll/best':>10} {'best peer':>9}"
    lines = [f"## {collective} ({scn.title}): median busbw, GB/s", head]
    for r in rows:
        cells = ["n/a" if unsupported(m, collective, s) else cell(r["busbw"][s]) for s in systems]
        lines.append(f"{human_size(r['size']):>10} " + " ".join(f"{c:>10}" for c in cells)
                     + f" {cell(r['ratio']):>10} {r['best'] or '-':>9}")
    small = rows[0]
    lines.append(f"{'time, us':>10} " + " ".join(f"{cell(small['time_us'][s]):>10}" for s in systems)
                 + f"   (at {human_size(small['size'])})")
    ceiling = scn.ceiling(statistics.median(m.limits) if m.limits else None)
    for s in systems:
        over = [human_size(r["size"]) for r in rows if ceiling and (r["busbw"][s] or 0) > ceiling]
        if over:
            lines.append(f"# {s}: above what the links allow at {', '.join(over)}: not over the network?")
    for (coll_name, system), errs in sorted(m.errors.items()):
        if coll_name == collective and unsupported(m, collective, system):
            lines.append(f"# {system}: n/a, the backend has no {collective}")
        elif coll_name == collective:
            lines.append(f"# {system}: " + errs[0].splitlines()[0] + (f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""))
    return "\n".join(lines)


def write_summary_csv(path, systems, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["size_bytes"] + [f"{s}_busbw_gbs" for s in systems] + [f"{s}_time_us" for s in systems]
                   + ["best_peer", "coll_over_best_peer"])
        for r in rows:
            w.writerow([r["size"]] + [cell(r["busbw"][s]) for s in systems]
                       + [cell(r["time_us"][s]) for s in systems] + [r["best"] or "", cell(r["ratio"])])


def write_raw_csv(path, m):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "collective", "system", "size_bytes", "time_us", "busbw_gbs", "wrong", "status",
                    "load1"])
        w.writerows(m.raw)


def plot(path, scn, collective, systems, rows, limit, load):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in systems:
        pts = [(r["size"], r["busbw"][s]) for r in rows if r["busbw"][s]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=s, color=COLORS[s], linewidth=2.5 if s == "coll" else 1.5)
    if limit:
        ax.axhline(limit, color="black", linestyle="--", linewidth=1,
                   label=f"{scn.limit_label} {limit:.3g} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xticks([r["size"] for r in rows], [human_size(r["size"]) for r in rows], rotation=30)
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes, nccl-tests' definition)")
    ax.set_ylabel("busbw (GB/s, median)")
    ax.set_title(f"{collective}, {scn.title}\nload average {load:.1f}; medians of interleaved rounds", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def report(scn, m, systems, collectives, out, rounds):
    limit = statistics.median(m.limits) if m.limits else None
    load = statistics.median(m.loads) if m.loads else 0.0
    header = (f"# {scn.title}; float32, sum, root 0; {rounds} interleaved rounds, medians; "
              f"load average {min(m.loads):.1f}-{max(m.loads):.1f} (median {load:.1f}) on "
              f"{os.cpu_count()} cores; {scn.limit_label}: {cell(limit)} GB/s")
    texts = [header]
    for collective in collectives:
        sizes = sorted({effective_size(collective, s, scn.n) for s in scn.sizes})
        rows = summary_rows(m, collective, systems, sizes)
        texts.append(table_text(scn, m, collective, systems, rows))
        write_summary_csv(out / f"{scn.name}_{collective}.csv", systems, rows)
        plot(out / f"{scn.name}_{collective}.png", scn, collective, systems, rows, limit, load)
    write_raw_csv(out / f"{scn.name}.csv", m)
    text = "\n\n".join(texts) + "\n"
    (out / f"{scn.name}.txt").write_text(text)
    errors = "\n".join(f"{c} {s}: {e}" for (c, s), errs in sorted(m.errors.items()) for e in errs
                       if not e.endswith("unsupported"))
    if errors:
        (out / f"{scn.name}.errors.txt").write_text(errors + "\n")
    return text


def headline(out):
    """Markdown: per scenario and collective, coll against the best peer at the smallest size
    (time, lower is better) and the largest (busbw), from the <scenario>_<collective>.csv files."""
    lines = ["| scenario | collective | smallest: coll time | best peer | coll/peer busbw "
             "| largest: coll busbw | best peer | coll/peer busbw |", "|---|---|---|---|---|---|---|---|"]
    names = [f"{s}_{c}" for s in ("local2", "local4", "net4x1", "net2x2") for c in COLLECTIVES]
    for name in names:
        path = out / f"{name}.csv"
        if not path.exists():
            continue
        rows = list(csv.DictReader(open(path)))
        small, large = rows[0], rows[-1]
        scenario, collective = name.split("_", 1)
        lines.append(f"| {scenario} | {collective} | {headline_cells(small, 'time_us', ' us')} "
                     f"| {headline_cells(large, 'busbw_gbs', ' GB/s')} |")
    return "\n".join(lines) + "\n"


def headline_cells(row, measure, unit):
    best = row["best_peer"]
    mine = row[f"coll_{measure}"]
    peer = row[f"{best}_{measure}"] if best else "-"
    return f"{human_size(int(row['size_bytes']))}: {mine}{unit} | {best or '-'} {peer}{unit} | {row['coll_over_best_peer']}"


def replot(out):
    """Redraws every <scenario>_<collective>.png from its medians CSV and the limit and load
    in <scenario>.txt's header (a figure's look can change without measuring again)."""
    for table in sorted(out.glob("*.txt")):
        header = table.read_text().splitlines()[0]
        load = float(re.search(r"median ([0-9.]+)\)", header)[1])
        limit_text = re.search(r": ([0-9.e+-]+|-) GB/s$", header)[1]
        limit = None if limit_text == "-" else float(limit_text)
        scn = ReplotScenario(table.stem, header)
        for collective in COLLECTIVES:
            path = out / f"{table.stem}_{collective}.csv"
            if path.exists():
                systems, rows = rows_from_csv(path)
                plot(out / f"{table.stem}_{collective}.png", scn, collective, systems, rows, limit, load)


class ReplotScenario:
    def __init__(self, name, header):
        self.name = name
        self.title = header[2:].split(";")[0]
        self.limit_label = "link rate" if name.startswith("net") else "memcpy (best of 1 and 2 threads)"


def rows_from_csv(path):
    """A medians CSV back into summary rows."""
    records = list(csv.DictReader(open(path)))
    systems = [k[: -len("_busbw_gbs")] for k in records[0] if k.endswith("_busbw_gbs")]
    number = lambda v: None if v in ("", "-") else float(v)
    rows = [{"size": int(r["size_bytes"]), "busbw": {s: number(r[f"{s}_busbw_gbs"]) for s in systems}}
            for r in records]
    return systems, rows


# ---------------------------------------------------------------- main

def scenarios_from(args):
    if args.headline or args.replot:
        return []
    if args.all:
        return [("local", 2), ("local", 4), ("net", 4, 1), ("net", 2, 2)]
    if args.local:
        return [("local", args.local)]
    if args.netcluster:
        return [("net", args.netcluster, args.per_host)]
    sys.exit("compare: give --local N, --netcluster H [--per-host R] or --all")


def make_scenario(args, spec):
    if spec[0] == "local":
        return LocalScenario(args, spec[1])
    return NetclusterScenario(args, spec[1], spec[2], args.rate)


def run_scenario(args, spec, out, log):
    scn = make_scenario(args, spec)
    try:
        if isinstance(scn, NetclusterScenario):
            scn.up()
        m, systems = measure(scn, args.collectives, args.rounds, log)
        return report(scn, m, systems, args.collectives, out, args.rounds)
    finally:
        kill_live()
        if isinstance(scn, NetclusterScenario):
            scn.down()
        scn.close()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--local", type=int, metavar="N", help="one host, N ranks")
    p.add_argument("--netcluster", type=int, metavar="H", help="simulated cluster of H hosts (root)")
    p.add_argument("--per-host", type=int, default=1, metavar="R")
    p.add_argument("--rate", default="1gbit", help="netcluster link rate (tc syntax)")
    p.add_argument("--all", action="store_true", help="local 2 and 4; netcluster 4x1 and 2x2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--collectives", default=",".join(COLLECTIVES))
    p.add_argument("--systems", default=",".join(SYSTEMS), help="a subset, for quick looks")
    p.add_argument("--sizes", help="comma-separated bytes (default 8,64K,1M,16M,64M)")
    p.add_argument("--net-mpich", action="store_true", help="MPICH on netcluster too (UCX over TCP)")
    p.add_argument("--net-256m", action="store_true", help="add 256 MiB on netcluster (seconds per op)")
    p.add_argument("--budget", type=int, default=64 << 20,
                   help="bytes per measurement: iterations = budget / size, at least 3")
    p.add_argument("--max-iters", type=int, default=100)
    p.add_argument("--timeout", type=int, default=300, help="seconds per launch")
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--out", default=str(ROOT / "build/compare"))
    p.add_argument("--replot", action="store_true",
                   help="only redraw the PNGs from the CSVs and tables already under --out")
    p.add_argument("--headline", action="store_true",
                   help="only print the markdown summary of the CSVs already under --out")
    args = p.parse_args()
    args.collectives = [c for c in args.collectives.split(",") if c]
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = set(args.collectives) - set(COLLECTIVES)
    if unknown:
        p.error(f"unknown collectives {sorted(unknown)}; known: {COLLECTIVES}")
    if args.sizes:
        global LOCAL_SIZES, NET_SIZES
        LOCAL_SIZES = NET_SIZES = [parse_bytes(s) for s in args.sizes.split(",")]
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
    (out / "headline.md").write_text(headline(out))
    print(headline(out))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
