#!/usr/bin/python3
"""The chaos soak: mixed, checked collectives on N ranks (build/bin/coll_chaos under collrun)
while this driver kills (SIGKILL) or stops (SIGSTOP, then SIGKILL once the survivors have
reported it) random ranks. After each fault the survivors report it, learn the victim from
this driver's fault file, shrink and go on; the next fault comes once every survivor runs on
the new communicator. At the end: ops run, faults injected, faults reported, wrong results,
leaked descriptors, threads and /dev/shm segments, and resident-set growth.

  bench/soak/chaos.py [--build build] [--ranks 6] [--minutes 10] [--transport shm|socket]
                      [--timeout 5] [--seed 1] [--min-ranks 2]

Exit 0 when nothing was wrong: every fault reported by every survivor, no wrong result, no
unexplained failure, nothing leaked.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

SUMMARY = re.compile(r"chaos-summary (.*)")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--ranks", type=int, default=6)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--transport", choices=["shm", "socket"], default="shm")
    p.add_argument("--timeout", type=int, default=5, help="COLL_TIMEOUT: a stopped rank is noticed after it")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-ranks", type=int, default=2, help="no fault that would leave fewer")
    return p.parse_args()


def coll_segments():
    return {n for n in os.listdir("/dev/shm") if n.startswith("coll")}


class Job:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.lines, self.summaries = [], {}
        env = dict(os.environ, COLL_TIMEOUT=str(args.timeout))
        if args.transport == "socket":
            env["COLL_TRANSPORT"] = "socket"
        seconds = args.minutes * 60
        cmd = [f"{args.build}/bin/collrun", "-n", str(args.ranks), "--kill-after", "0",
               "--timeout", str(int(seconds + 120)), "--", f"{args.build}/bin/coll_chaos", "--dir", work,
               "--seconds", str(seconds), "--seed", str(args.seed)]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            m = SUMMARY.search(line)
            if m:
                fields = dict(kv.split("=", 1) for kv in re.findall(r'(\w+=(?:"[^"]*"|\S+))', m.group(1)))
                self.summaries[int(fields["rank"])] = fields

    def pid_of(self, rank):
        try:
            with open(f"{self.work}/pid.{rank}") as f:
                return int(f.read())
        except (OSError, ValueError):
            return None

    def at_epoch(self, epoch, alive):
        return all(os.path.exists(f"{self.work}/epoch.{epoch}.{r}") for r in alive)


def wait_until(predicate, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def inject(job, rng, alive, index, timeout):
    """One fault on a random live rank; returns (rank, kind)."""
    victim = rng.choice(sorted(alive))
    kind = rng.choice(["kill", "stop"])
    pid = job.pid_of(victim)
    with open(f"{job.work}/faults", "a") as f:  # on record before the signal
        f.write(f"{index} {victim} {kind} {time.monotonic_ns()}\n")
    os.kill(pid, signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
    print(f"chaos: fault {index}: {kind} rank {victim} (pid {pid})", flush=True)
    if kind == "stop":  # killed once the survivors had time to notice (COLL_TIMEOUT) and report
        threading.Timer(3 * timeout + 5, lambda: os.kill(pid, signal.SIGKILL)).start()
    return victim, kind


def drive(job, args):
    rng = random.Random(args.seed)
    alive = set(range(args.ranks))
    end = time.monotonic() + args.minutes * 60
    faults = []
    # Spread the faults over the run, leaving the last fifth for the survivors to run on.
    budget = args.ranks - args.min_ranks
    gap = args.minutes * 60 * 0.8 / max(budget, 1)
    wait_until(lambda: job.at_epoch(0, alive), 120)
    for index in range(budget):
        time.sleep(rng.uniform(0.5, 1.0) * gap)
        if time.monotonic() > end - 30 or job.proc.poll() is not None:
            break
        victim, kind = inject(job, rng, alive, index, args.timeout)
        faults.append((victim, kind))
        alive.discard(victim)
        if not wait_until(lambda: job.at_epoch(index + 1, alive), 10 * args.timeout + 60):
            print(f"chaos: the survivors did not all reach epoch {index + 1}", flush=True)
            break
    return faults, alive


def read_reports(work, faults):
    """Each survivor's report of each fault: (code, seconds, named) from its report file."""
    reports = []
    for index in range(len(faults)):
        for name in os.listdir(work):
            if name.startswith(f"report.{index}."):
                with open(f"{work}/{name}") as f:
                    code, seconds, named = f.read().split()
                reports.append((code, float(seconds), named == "named"))
    return reports


def report(job, args, faults, alive, leaked_segments, seconds):
    s = job.summaries
    total = lambda key: sum(int(v[key]) for v in s.values())
    # Fault i has every rank alive after it as a survivor: the final ones and later victims.
    expected_reports = sum(len(alive) + len(faults) - i - 1 for i in range(len(faults)))
    reports = read_reports(job.work, faults)
    in_time = [r for r in reports if r[0] in ("PeerLost", "Timeout")]
    rss = [(int(v["rss_after"]) - int(v["rss_before"])) / int(v["rss_before"]) * 100 for v in s.values()]
    # Left over once every communicator is destroyed, against before the first was made.
    fds = max((int(v["fds_after"]) - int(v["fds_start"]) for v in s.values()), default=0)
    # The launcher watcher (one thread per process, started with the first communicator) stays.
    threads = max((int(v["threads_after"]) - int(v["threads_start"]) - int(v.get("lifeline", 0))
                   for v in s.values()), default=0)
    rows = [
        ("ranks at start / at the end", f"{args.ranks} / {len(alive)}"),
        ("transport, COLL_TIMEOUT", f"{args.transport}, {args.timeout} s"),
        ("wall time", f"{seconds / 60:.1f} min"),
        ("ops run (all ranks)", f"{total('ops'):,}"),
        ("faults injected", f"{len(faults)} ({', '.join(f'{k} rank {r}' for r, k in faults)})"),
        ("faults reported (survivor x fault)", f"{len(in_time)} of {expected_reports} "
                                                f"({', '.join(sorted({r[0] for r in reports})) or 'none'})"),
        ("reports naming the victim", f"{sum(r[2] for r in reports)} of {expected_reports}"),
        ("report time after the fault", f"{min((r[1] for r in reports), default=0):.2f} to "
                                        f"{max((r[1] for r in reports), default=0):.2f} s"),
        ("wrong results", str(total("wrong"))),
        ("unexplained failures", str(total("unexplained"))),
        ("descriptors, threads leaked (worst rank; all communicators destroyed, against before the first)",
         f"{fds:+d}, {threads:+d}"),
        ("leaked /dev/shm segments", str(len(leaked_segments))),
        ("resident set at the end (communicators destroyed) against after the warm-up (worst rank)",
         f"{max(rss, default=0):+.1f} %"),
        ("survivors' summaries", f"{len(s)} of {len(alive)}"),
    ]
    print("\n| chaos soak | |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    ok = (total("wrong") == 0 and total("unexplained") == 0 and len(in_time) == expected_reports and
          fds <= 0 and threads <= 0 and not leaked_segments and len(s) == len(alive))
    return ok


def main():
    args = parse_args()
    before = coll_segments()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="coll-chaos.") as work:
        job = Job(args, work)
        faults, alive = drive(job, args)
        code = job.proc.wait()
        job.reader.join(timeout=10)
        time.sleep(1)
        leaked = coll_segments() - before
        for line in job.lines:
            if "chaos:" in line and "chaos-summary" not in line:
                print(line)
        ok = report(job, args, faults, alive, leaked, time.monotonic() - start)
        # collrun's own status is the killed ranks' (137): the survivors' summaries judge.
        print(f"\ncollrun exited {code} (killed ranks count there); verdict: {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
