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

With --grow-back the job does not run down: after each fault, once the survivors run on, the
driver starts a replacement (coll_chaos --join, outside collrun, with the job's secret), the
members admit it with grow(), and the next fault comes once the job is whole again, every
--gap seconds or so until the time is up. Then it also reports faults survived per hour and,
per fault, the time from the signal to the survivors' new communicator and to the job whole
again (median and 99th percentile). One of collrun's own ranks is always left alive: collrun
serves the job's store.

  bench/soak/chaos.py [--build build] [--ranks 6] [--minutes 10] [--transport shm|socket]
                      [--timeout 5] [--seed 1] [--min-ranks 2] [--recoveries 0]
                      [--grow-back [--gap 4]]

Exit 0 when nothing was wrong. ctest chaos.short runs it for a minute.
"""
import argparse
import os
import random
import re
import signal
import struct
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
    p.add_argument("--grow-back", action="store_true", help="a replacement joins after every fault")
    p.add_argument("--gap", type=float, default=4, help="--grow-back: seconds between faults, about")
    return p.parse_args()


def coll_segments():
    return {n for n in os.listdir("/dev/shm") if n.startswith("coll")}


def segment_owner(name):
    """The PID a coll segment's header names as its owner (src/transport/shm/layout.h,
    SegmentHeader::owner_pid, at byte 20 in every layout version), or None where it cannot be
    read (gone meanwhile, or not a segment)."""
    try:
        with open(f"/dev/shm/{name}", "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    return struct.unpack_from("<i", head, 20)[0] if len(head) == 24 else None


class Job:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.lines, self.summaries = [], {}
        # Known to the driver, so that a replacement can join (collrun passes it to its ranks).
        self.env = dict(os.environ, COLL_TIMEOUT=str(args.timeout), COLL_JOB_SECRET=os.urandom(16).hex())
        if args.transport == "socket":
            self.env["COLL_TRANSPORT"] = "socket"
        seconds = args.minutes * 60
        self.end = time.monotonic() + seconds
        self.rank_args = ["--seed", str(args.seed), "--recoveries", str(args.recoveries)]
        cmd = [f"{args.build}/bin/collrun", "-n", str(args.ranks), "--kill-after", "0",
               "--timeout", str(int(seconds + 120)), "--", f"{args.build}/bin/coll_chaos", "--dir", work,
               "--seconds", str(seconds)] + self.rank_args
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.joiners = []
        self.readers = [threading.Thread(target=self.read, args=(self.proc.stdout,), daemon=True)]
        self.readers[0].start()

    def start_joiner(self, ident, index):
        """A replacement with id `ident`, the index-th joiner; it runs until the job's end."""
        seconds = max(self.end - time.monotonic(), 1)
        cmd = [f"{self.args.build}/bin/coll_chaos", "--dir", self.work, "--seconds", f"{seconds:.1f}",
               "--join", str(ident), "--join-index", str(index)] + self.rank_args
        proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.joiners.append(proc)
        reader = threading.Thread(target=self.read, args=(proc.stdout,), daemon=True)
        reader.start()
        self.readers.append(reader)
        with open(f"{self.work}/pid.{ident}", "w") as f:
            f.write(str(proc.pid))

    def wait(self):
        code = self.proc.wait()
        for p in self.joiners:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for r in self.readers:
            r.join(timeout=10)
        return code

    def read(self, stream):
        for line in stream:
            self.lines.append(line.rstrip("\n"))
            m = SUMMARY.search(line)
            if m:
                fields = dict(kv.split("=", 1) for kv in re.findall(r'(\w+=(?:"[^"]*"|\S+))', m.group(1)))
                self.summaries[int(fields["rank"])] = fields

    def pids(self):
        """Every PID this job's ranks and replacements had (each wrote its pid.<id> file)."""
        found = set()
        for name in os.listdir(self.work):
            if name.startswith("pid."):
                with open(f"{self.work}/{name}") as f:
                    text = f.read().strip()
                if text.isdigit():
                    found.add(int(text))
        return found

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


def inject(job, rng, alive, index, timeout, spare=None):
    """One fault on a random live rank (never `spare`); returns (rank, kind)."""
    victim = rng.choice(sorted(alive - {spare}))
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
    """Injects the faults; returns (faults, alive at the end, members expected per epoch, the
    survivors of each fault, the seconds from each fault to the job whole again)."""
    if args.grow_back:
        return drive_growing_back(job, args)
    rng = random.Random(args.seed)
    alive = set(range(args.ranks))
    end = time.monotonic() + args.minutes * 60
    faults, expected, survivors = [], {}, []
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
        survivors.append(set(alive))
        expected[index + 1] = sorted(alive)
        if not wait_until(lambda: job.at_epoch(index + 1, alive), 10 * args.timeout + 60):
            print(f"chaos: the survivors did not all reach epoch {index + 1}", flush=True)
            break
    return faults, alive, expected, survivors, []


def drive_growing_back(job, args):
    """Fault, the survivors shrink, a replacement joins, the job is whole again; and again.
    Each process keeps its id: ranks at start 0..N-1, replacements N, N+1, ..."""
    rng = random.Random(args.seed)
    alive = set(range(args.ranks))
    faults, expected, survivors, whole_again = [], {}, [], []
    epoch, next_id = 0, args.ranks
    wait_until(lambda: job.at_epoch(0, alive), 120)
    while True:
        time.sleep(rng.uniform(0.5, 1.5) * args.gap)
        if time.monotonic() > job.end - 30 or job.proc.poll() is not None:
            break
        index = len(faults)
        originals = alive & set(range(args.ranks))
        spare = min(originals) if len(originals) == 1 else None  # collrun serves the store: keep one of its ranks
        injected = time.monotonic()
        victim, kind = inject(job, rng, alive, index, args.timeout, spare)
        faults.append((victim, kind))
        alive.discard(victim)
        survivors.append(set(alive))
        epoch += 1
        expected[epoch] = sorted(alive)
        if not wait_until(lambda: job.at_epoch(epoch, alive), 10 * args.timeout + 60):
            print(f"chaos: the survivors did not all reach epoch {epoch}", flush=True)
            break
        job.start_joiner(next_id, index)
        alive.add(next_id)
        next_id += 1
        epoch += 1
        expected[epoch] = sorted(alive)
        if not wait_until(lambda: job.at_epoch(epoch, alive), 10 * args.timeout + 60):
            print(f"chaos: replacement {next_id - 1} was not admitted (epoch {epoch})", flush=True)
            break
        whole_again.append(time.monotonic() - injected)
        print(f"chaos: fault {index}: the job is whole again after {whole_again[-1]:.2f} s", flush=True)
    return faults, alive, expected, survivors, whole_again


def read_reports(work, faults):
    """Each survivor's report of each fault: (code, seconds to the error, named, seconds to the
    new communicator, the ids it left out, the fault's index) from its report file."""
    reports = []
    names = os.listdir(work)
    for index in range(len(faults)):
        for name in names:
            if name.startswith(f"report.{index}."):
                with open(f"{work}/{name}") as f:
                    code, seconds, named, recovered, gone = f.read().split()
                reports.append((code, float(seconds), named == "named", float(recovered), gone, index))
    return reports


def memberships_agree(work, expected_by_epoch):
    """In every epoch after the first each member saw the same members: the driver's, in order."""
    bad = []
    for epoch, expected in sorted(expected_by_epoch.items()):
        seen = {}
        for r in expected:
            try:
                with open(f"{work}/members.{epoch}.{r}") as f:
                    seen[r] = f.read().strip()
            except OSError:
                seen[r] = "(none)"
        want = ",".join(map(str, expected))
        bad += [f"in epoch {epoch} rank {r} saw {v}, not {want}" for r, v in seen.items() if v != want]
    return bad


def percentile(values, q):
    """The q-th percentile (nearest rank) of values; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))]


def report(job, args, driven, leaked_segments, seconds):
    faults, alive, expected_members, survivors, whole_again = driven
    s = job.summaries
    total = lambda key: sum(int(v[key]) for v in s.values())
    expected_reports = sum(len(group) for group in survivors)
    reports = read_reports(job.work, faults)
    in_time = [r for r in reports if r[0] in ("PeerLost", "Timeout")]
    # Ranks there from the start (a replacement's "before" is taken before its first op).
    rss = [(int(v["rss_after"]) - int(v["rss_before"])) / int(v["rss_before"]) * 100 for v in s.values()
           if int(v["rank"]) < args.ranks]
    # Left over once every communicator is destroyed, against before the first was made.
    fds = max((int(v["fds_after"]) - int(v["fds_start"]) for v in s.values()), default=0)
    # The launcher watcher (one thread per process, started with the first communicator) stays.
    threads = max((int(v["threads_after"]) - int(v["threads_start"]) - int(v.get("lifeline", 0))
                   for v in s.values()), default=0)
    bad_members = memberships_agree(job.work, expected_members)
    slowest = max((r[3] for r in reports), default=0)
    # Per fault, the slowest survivor's time to its new communicator.
    per_fault = [max(r[3] for r in reports if r[5] == i) for i in range(len(faults)) if any(r[5] == i for r in reports)]
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
        ("fault to the new communicator, per fault: median, 99th percentile",
         f"{percentile(per_fault, 50):.2f} s, {percentile(per_fault, 99):.2f} s"),
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
        ("resident set at the end (communicators destroyed) against after the warm-up (worst rank there from the start)",
         f"{max(rss, default=0):+.1f} %"),
        ("survivors' summaries", f"{len(s)} of {len(alive)}"),
    ]
    if args.grow_back:
        hours = seconds / 3600
        rows[1:1] = [
            ("replacements admitted", f"{len(whole_again)}"),
            ("faults survived per hour (grown back after each)", f"{len(whole_again) / hours:.0f}"),
            ("fault to the job whole again: median, 99th percentile, slowest",
             f"{percentile(whole_again, 50):.2f} s, {percentile(whole_again, 99):.2f} s, "
             f"{max(whole_again, default=0):.2f} s"),
        ]
    print("\n| chaos soak | |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    grown_back = not args.grow_back or len(whole_again) == len(faults)
    ok = (total("wrong") == 0 and total("unexplained") == 0 and len(in_time) == expected_reports and grown_back and
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
        driven = drive(job, args)
        code = job.wait()
        time.sleep(1)
        # This job's segments only: other tests of the same ctest run may hold theirs meanwhile.
        # (One whose owner was killed before writing its header names no PID; the next start-up
        # on the host removes it, stale_segments.h.)
        pids = job.pids()
        leaked = {n for n in coll_segments() - before if segment_owner(n) in pids}
        for line in job.lines:
            if "chaos:" in line and "chaos-summary" not in line:
                print(line)
        ok = report(job, args, driven, leaked, time.monotonic() - start)
        # collrun's own status is the killed ranks' (137): the survivors' summaries judge.
        print(f"\ncollrun exited {code} (killed ranks count there); verdict: {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
