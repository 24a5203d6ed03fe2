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
the peak private memory of a rank (RssAnon, sampled from /proc every 20 ms; the largest rank
and the mean), and the host's shared memory the job added at its peak (Shmem in
/proc/meminfo, which counts /dev/shm and every other tmpfs page), divided by N.

  startup_scale.py [--ranks 8,32,64,128,256] [--peers openmpi] [--build build] [--timeout 600]
                   [--hosts H]

A job past --timeout is killed (its process group) and reported as such. The machine is
shared: read the two columns of one row against each other, not against another run.
"""
import argparse
import os
import signal
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


def run_job(command, program, timeout):
    """Runs COMMAND; returns (seconds, exit code, {pid: peak RssAnon KiB}, peak Shmem added KiB)."""
    shmem0 = meminfo_kib("Shmem")
    start = time.monotonic()
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    peaks, shmem_peak, rc = {}, 0, None
    log = []
    os.set_blocking(job.stdout.fileno(), False)
    while rc is None:
        for pid in children_of(job.pid):
            kib = rss_anon_kib(pid, program)
            if kib is not None:
                peaks[pid] = max(peaks.get(pid, 0), kib)
        shmem_peak = max(shmem_peak, meminfo_kib("Shmem") - shmem0)
        chunk = job.stdout.read()
        if chunk:
            log.append(chunk)
        if time.monotonic() - start > timeout:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            return timeout, "timeout", peaks, shmem_peak, b"".join(log)
        time.sleep(0.02)
        rc = job.poll()
    seconds = time.monotonic() - start
    rest = job.stdout.read()
    if rest:
        log.append(rest)
    return seconds, rc, peaks, shmem_peak, b"".join(log)


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
        return [netcluster(), "exec", f"{PREFIX}0", "--", "mpirun.openmpi", "--allow-run-as-root", "--bind-to", "none",
                "--mca", "plm_rsh_agent", agent, "-H", hostlist, "-n", str(n), os.path.abspath(program)] + args, name
    if tool == "coll":
        return [f"{build}/bin/collrun", "-n", str(n), program] + args, name
    if tool == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(n), program] + args, name
    raise SystemExit(f"unknown peer {tool}")


def mib(kib):
    return f"{kib / 1024:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="8,32,64,128,256")
    ap.add_argument("--peers", default="openmpi")
    ap.add_argument("--build", default="build")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--hosts", type=int, default=1)
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
    print(f"# {'ranks':>5} {'library':>8} {'wall s':>8} {'exit':>7} {'private MiB/rank':>17} {'(max)':>8} "
          f"{'shared MiB/rank':>16} {'host shm MiB':>13}")
    for n in [int(x) for x in args.ranks.split(",")]:
        for tool in tools:
            command, program = commands(tool, n, args.build, args.hosts, agent)
            seconds, rc, peaks, shmem, log = run_job(command, program, args.timeout)
            ok = rc == 0 and (tool != "coll" or b"Out of bounds values : 0 OK" in log)
            values = list(peaks.values()) or [0]
            mean = sum(values) / len(values)
            print(f"  {n:>5} {tool:>8} {seconds:>8.2f} {str(rc) if ok or rc != 0 else 'wrong':>7} {mib(mean):>17} "
                  f"{mib(max(values)):>8} {mib(shmem / n):>16} {mib(shmem):>13}", flush=True)
            if not ok:
                tail = log.decode(errors="replace").splitlines()[-8:]
                print("\n".join("    | " + line for line in tail), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
