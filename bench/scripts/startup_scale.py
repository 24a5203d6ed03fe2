#!/usr/bin/env python3
"""Start-up and memory with many ranks on one host, coll beside Open MPI in the same run.

For each rank count, alternating coll and the peer, one job that starts, does one 8-byte
all-reduce and ends:
  coll     collrun -n N all_reduce_perf -b 8 -e 8 -n 1 -w 0 -c 1
  openmpi  mpirun.openmpi --oversubscribe -np N mpi_perf_openmpi allreduce 8 8 2 1 0 1
With --hosts H (root), the ranks are spread over H simulated hosts (shared/tools/netcluster,
prefix nss, subnet 10.214.41, unshaped) and both jobs start under one launcher, Open MPI's
mpirun over `netcluster rsh` (coll finds its store through PMIx), N/H ranks a host.

Prints, per job: the wall time from launch to exit (start-up dominates it: one op of 8 B),
for coll the time from launch until its last rank was ready (each rank logs its start-up at
COLL_DEBUG=INFO with the wall clock, src/comm/startup_report.h) and coll-sim's estimate of
it for the same layout and cores (tools/sim/startup_model.h), with their ratio; coll-sim's CPU
costs are first scaled to this machine's speed in this run by one one-host job of --calibrate
ranks (64; a shared machine ran the same 128-rank job in 1.85 s one day and 0.76 s another),
so the other rows are predictions,
the peak private memory of a rank (RssAnon, sampled from /proc every 20 ms; the largest rank
and the mean), and the host's shared memory the job added at its peak (Shmem in
/proc/meminfo, which counts /dev/shm and every other tmpfs page), divided by N, and the most
sockets a rank held (every 10th sample; the mean over ranks: store clients, listeners and
connections to peers).

  startup_scale.py [--ranks 8,32,64,128,256] [--peers openmpi] [--build build] [--timeout 600]
                   [--hosts H] [--no-sim] [--calibrate N]

A job past --timeout is killed (its process group) and reported as such. The machine is
shared: read the two columns of one row against each other, not against another run.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time


def meminfo_kib(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def children_of(root):
    """Every live descendant of pid `root` (one pass over /proc)."""
    parent = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
            parent[int(name)] = int(text[text.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
    out, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in out}
        out |= frontier
    return out


def rss_anon_kib(pid, program):
    try:
        with open(f"/proc/{pid}/comm") as f:
            if not program.startswith(f.read().strip()):
                return None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def open_sockets(pid):
    """How many sockets pid holds (store clients, connections to peers, listeners)."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
            except OSError:
                pass
    except OSError:
        return None
    return n


READY_AT = re.compile(r"rank (\d+) of \d+ ready in [^\n]*?; at ([0-9]+\.[0-9]+)")


def ready_seconds(log, launched, n):
    """Launch to the last rank's "ready" line; None unless all n ranks logged one."""
    at = {int(m.group(1)): float(m.group(2)) for m in READY_AT.finditer(log.decode(errors="replace"))}
    return max(at.values()) - launched if len(at) == n else None


def simulated(build, n, hosts, cpu_scale=1.0):
    """coll-sim's start-up estimate for n ranks on `hosts` hosts of this machine's cores, its CPU
    costs times cpu_scale: (ready s, first all-reduce s, private MiB, rank 0 private MiB, shared MiB)."""
    cores = os.cpu_count() / hosts  # netcluster's hosts share this machine's cores
    args = [f"{build}/bin/coll-sim", "--startup", "--hosts", str(hosts), "--per-host", str(n // hosts),
            "--cores", f"{cores:g}", "--link", "10gbit", "--cpu-scale", f"{cpu_scale:.4g}"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    ready = re.search(r"every rank ready: ([0-9.]+) s; first all-reduce \(8 B, \S+\): ([0-9.]+) us", out)
    mem = re.search(r"private ([0-9.]+) MiB \(rank 0, with the store: ([0-9.]+) MiB\), shared ([0-9.]+) MiB", out)
    if not ready or not mem:
        return None
    return float(ready.group(1)), float(ready.group(2)) / 1e6, float(mem.group(1)), float(mem.group(2)), \
        float(mem.group(3))


def run_job(command, program, timeout, env=None):
    """Runs COMMAND; returns (seconds, exit code, {pid: peak RssAnon KiB}, peak Shmem added KiB, log, launch time,
    {pid: most sockets held}); sockets are counted every 10th sample (a readlink per descriptor)."""
    shmem0 = meminfo_kib("Shmem")
    start = time.monotonic()
    launched = time.time()
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                           env=env)
    peaks, shmem_peak, rc = {}, 0, None
    sockets, sample = {}, 0
    log = []
    os.set_blocking(job.stdout.fileno(), False)
    while rc is None:
        for pid in children_of(job.pid):
            kib = rss_anon_kib(pid, program)
            if kib is not None:
                peaks[pid] = max(peaks.get(pid, 0), kib)
                held = open_sockets(pid) if sample % 10 == 0 else None
                if held is not None:
                    sockets[pid] = max(sockets.get(pid, 0), held)
        sample += 1
        shmem_peak = max(shmem_peak, meminfo_kib("Shmem") - shmem0)
        chunk = job.stdout.read()
        if chunk:
            log.append(chunk)
        if time.monotonic() - start > timeout:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            return timeout, "timeout", peaks, shmem_peak, b"".join(log), launched, sockets
        time.sleep(0.02)
        rc = job.poll()
    seconds = time.monotonic() - start
    rest = job.stdout.read()
    if rest:
        log.append(rest)
    return seconds, rc, peaks, shmem_peak, b"".join(log), launched, sockets


PREFIX, SUBNET = "nss", "10.214.41"


def netcluster():
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "../../../shared/tools/netcluster"), "/work/shared/tools/netcluster"):
        if os.access(path, os.X_OK):
            return os.path.abspath(path)
    raise SystemExit("no shared/tools/netcluster for --hosts")


def commands(tool, n, build, hosts, agent):
    program = f"{build}/bin/all_reduce_perf" if tool == "coll" else f"{build}/peers/mpi_perf_openmpi"
    args = ["-b", "8", "-e", "8", "-n", "1", "-w", "0", "-c", "1"] if tool == "coll" else \
        ["allreduce", "8", "8", "2", "1", "0", "1"]
    name = os.path.basename(program)
    if hosts > 1:  # one launcher for both: mpirun over the simulated hosts
        hostlist = ",".join(f"{PREFIX}{k}:{n // hosts}" for k in range(hosts))
        forward = ["-x", "COLL_DEBUG", "-x", "COLL_DEBUG_SUBSYS"] if tool == "coll" else []
        return [netcluster(), "exec", f"{PREFIX}0", "--", "mpirun.openmpi", "--allow-run-as-root", "--bind-to", "none",
                "--mca", "plm_rsh_agent", agent] + forward + ["-H", hostlist, "-n", str(n), os.path.abspath(program)] + \
            args, name
    if tool == "coll":
        return [f"{build}/bin/collrun", "-n", str(n), program] + args, name
    if tool == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(n), program] + args, name
    raise SystemExit(f"unknown peer {tool}")


CALIBRATION_JOBS = 3  # one job's time to ready moved by up to 30 % from one job to the next


def calibrate(args):
    """The machine's speed in this run: the median time to ready of CALIBRATION_JOBS jobs of
    args.calibrate ranks on this host, and the factor on coll-sim's CPU costs (measured on another
    day) that makes its estimate that time; the other rows are then predictions. 1.0 where there
    is no calibration job."""
    if args.calibrate <= 0 or args.no_sim:
        return 1.0
    n = args.calibrate
    command, program = commands("coll", n, args.build, 1, None)
    env = dict(os.environ, COLL_DEBUG="INFO", COLL_DEBUG_SUBSYS="INIT")
    times = []
    for _ in range(CALIBRATION_JOBS):
        _, rc, _, _, log, launched, _ = run_job(command, program, args.timeout, env)
        ready = ready_seconds(log, launched, n) if rc == 0 else None
        if not ready:
            print(f"# calibration: a {n}-rank job failed (exit {rc}); coll-sim at its default costs", flush=True)
            return 1.0
        times.append(ready)
    ready = statistics.median(times)
    scale = 1.0
    for _ in range(2):  # nearly linear in the factor; a second pass takes up what is not
        sim = simulated(args.build, n, 1, scale)
        if not sim:
            return 1.0
        scale *= ready / sim[0]
    print(f"# calibration: {n} ranks on this host ready in {ready:.2f} s (the median of "
          f"{', '.join(f'{t:.2f}' for t in times)}); coll-sim's CPU costs x {scale:.2f} "
          f"(--cpu-scale) make its estimate that; every sim column below uses them", flush=True)
    return scale


def mib(kib):
    return f"{kib / 1024:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="8,32,64,128,256")
    ap.add_argument("--peers", default="openmpi")
    ap.add_argument("--build", default="build")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--hosts", type=int, default=1)
    ap.add_argument("--no-sim", action="store_true", help="no coll-sim estimate beside coll's rows")
    ap.add_argument("--calibrate", type=int, default=64, metavar="N",
                    help="ranks of the one-host job that sets coll-sim's CPU speed for this run (0: its defaults)")
    args = ap.parse_args()
    agent = None
    if args.hosts > 1:
        nc = netcluster()
        subprocess.run([nc, "up", str(args.hosts), "--prefix", PREFIX, "--subnet", SUBNET, "--rate", "none"],
                       check=True, stdout=subprocess.DEVNULL, timeout=120)
        agent = f"/tmp/startup_scale_rsh.{os.getpid()}"
        with open(agent, "w") as f:
            f.write(f'#!/bin/sh\nexec {nc} rsh "$@"\n')
        os.chmod(agent, 0o755)
    try:
        return measure(args, agent)
    finally:
        if agent:
            subprocess.run([netcluster(), "down", "--prefix", PREFIX], stdout=subprocess.DEVNULL, timeout=120)
            os.unlink(agent)


def measure(args, agent):
    tools = ["coll"] + [p for p in args.peers.split(",") if p]
    where = f"{args.hosts} simulated hosts (netcluster, mpirun)" if args.hosts > 1 else "one host"
    print(f"# start-up and memory, {where}, {os.cpu_count()} CPUs; one 8 B all-reduce per job")
    scale = calibrate(args)
    print(f"# {'ranks':>5} {'library':>8} {'wall s':>8} {'exit':>7} {'private MiB/rank':>17} {'(max)':>8} "
          f"{'shared MiB/rank':>16} {'host shm MiB':>13} {'sockets/rank':>13} {'ready s':>8} {'sim ready s':>12} {'sim/meas':>9} "
          f"{'sim private':>12} {'sim rank 0':>11} {'sim shared':>11}")
    for n in [int(x) for x in args.ranks.split(",")]:
        for tool in tools:
            command, program = commands(tool, n, args.build, args.hosts, agent)
            env = dict(os.environ, COLL_DEBUG="INFO", COLL_DEBUG_SUBSYS="INIT") if tool == "coll" else None
            seconds, rc, peaks, shmem, log, launched, sockets = run_job(command, program, args.timeout, env)
            ok = rc == 0 and (tool != "coll" or b"Out of bounds values : 0 OK" in log)
            values = list(peaks.values()) or [0]
            mean = sum(values) / len(values)
            row = f"  {n:>5} {tool:>8} {seconds:>8.2f} {str(rc) if ok or rc != 0 else 'wrong':>7} {mib(mean):>17} " \
                  f"{mib(max(values)):>8} {mib(shmem / n):>16} {mib(shmem):>13} " \
                  f"{sum(sockets.values()) / max(len(sockets), 1):>13.1f}"
            if tool == "coll":
                ready = ready_seconds(log, launched, n)
                row += f" {ready:>8.2f}" if ready is not None else f" {'-':>8}"
                sim = None if args.no_sim else simulated(args.build, n, args.hosts, scale)
                if sim:
                    ratio = f"{sim[0] / ready:.2f}" if ready else "-"
                    row += f" {sim[0]:>12.2f} {ratio:>9} {sim[2]:>12.2f} {sim[3]:>11.2f} {sim[4]:>11.2f}"
            print(row, flush=True)
            if not ok:
                tail = log.decode(errors="replace").splitlines()[-8:]
                print("\n".join("    | " + line for line in tail), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
