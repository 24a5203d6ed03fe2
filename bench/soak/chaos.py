#!/usr/bin/python3
"""The chaos soak: mixed, checked collectives and point-to-point on N ranks (build/bin/coll_chaos
under collrun) while this driver kills (SIGKILL) or stops (SIGSTOP, then SIGKILL once the
survivors have gone on) random ranks at random moments. After each fault the survivors report
it and shrink() without being told whom to leave out (they find the dead and agree on who is
alive); the next fault comes once every survivor runs on the new communicator. Then each rank
recovers --recoveries more times with nobody failed (revoke, agree, a new communicator), so
that anything a recovery leaks adds up. At the end: ops run, faults injected and reported,
whether every survivor left out exactly the victims and saw the same membership, the time
from a fault to the new communicator against 2 x COLL_TIMEOUT, wrong results, leaked
descriptors, threads and /dev/shm segments, and resident-set growth.

  bench/soak/chaos.py [--build build] [--ranks 6] [--minutes 10] [--transport shm|socket]
                      [--timeout 5] [--seed 1] [--min-ranks 2] [--recoveries 0]

Exit 0 when nothing was wrong. ctest chaos.short runs it for a minute.
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
    p.add_argument("--recoveries", type=int, default=0, help="fault-free shrinks at the end, for leaks")
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
               "--seconds", str(seconds), "--seed", str(args.seed), "--recoveries", str(args.recoveries)]
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
    """Each survivor's report of each fault: (code, seconds to the error, named, seconds to the
    new communicator, the ranks it left out) from its report file."""
    reports = []
    for index in range(len(faults)):
        for name in os.listdir(work):
            if name.startswith(f"report.{index}."):
                with open(f"{work}/{name}") as f:
                    code, seconds, named, recovered, gone = f.read().split()
                reports.append((code, float(seconds), named == "named", float(recovered), gone))
    return reports


def memberships_agree(work, faults, alive):
    """After fault i every survivor of it saw the same members: all alive then, in order."""
    bad = []
    for index in range(len(faults)):
        expected = sorted(alive | {r for r, _ in faults[index + 1:]})
        seen = {}
        for r in expected:
            try:
                with open(f"{work}/members.{index + 1}.{r}") as f:
                    seen[r] = f.read().strip()
            except OSError:
                seen[r] = "(none)"
        want = ",".join(map(str, expected))
        bad += [f"after fault {index} rank {r} saw {v}, not {want}" for r, v in seen.items() if v != want]
    return bad


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
    bad_members = memberships_agree(job.work, faults, alive)
    slowest = max((r[3] for r in reports), default=0)
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
        ("every survivor left out exactly the victims, same membership", "yes" if not bad_members else
         "; ".join(bad_members[:3])),
        ("fault to the new communicator (slowest survivor)", f"{slowest:.2f} s (2 x COLL_TIMEOUT = {2 * args.timeout} s)"),
        ("fault-free recoveries (each rank) at the end", str(min((int(v.get("recoveries", 0)) for v in s.values()),
                                                                 default=0)) +
         f" (ops another rank's shrink revoked: {total('revoked_ops')})"),
        ("wrong results", str(total("wrong"))),
        ("unexplained failures", str(total("unexplained"))),
        ("descriptors, threads leaked (worst rank; all communicators destroyed, against before the first)",
         f"{fds:+d}, {threads:+d}"),
        ("leaked /dev/shm segments", str(len(leaked_segments))),
        ("leak checks after every recovery (descriptors, threads, segments still named): leaks / checks",
         f"{total('leaks')} / {total('leak_checks')}"),
        ("resident set at the end (communicators destroyed) against after the warm-up (worst rank)",
         f"{max(rss, default=0):+.1f} %"),
        ("survivors' summaries", f"{len(s)} of {len(alive)}"),
    ]
    print("\n| chaos soak | |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    ok = (total("wrong") == 0 and total("unexplained") == 0 and len(in_time) == expected_reports and
          fds <= 0 and threads <= 0 and not leaked_segments and len(s) == len(alive) and not bad_members and
          total("leaks") == 0 and
          slowest <= 2 * args.timeout and
          all(int(v.get("recoveries", 0)) == args.recoveries for v in s.values()))
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
