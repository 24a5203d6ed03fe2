"""compare.py --algos: coll's all-reduce algorithms forced one by one (COLL_ALGO=allreduce:<name>)
beside the automatic choice, per size, on one host or on netcluster: how often the selector's
pick is within 10 % of the fastest forced algorithm, and each algorithm's time and busbw.

Two ways to run the columns:
- separate jobs (the default): --rounds interleaved rounds, each running every column once as
  its own job, starting one column further on each round (so no column always runs first, right
  after the previous round's largest run), a second's pause before every job (ranks that held
  gigabytes take the kernel that long to tear down: a small-message job started meanwhile
  measured 20-25 % slow);
- --in-job: every column in one job per size range (all_reduce_perf -Q, setAlgorithms between
  them, -j rounds interleaved inside it), so the columns share one process placement: on a busy
  2-core machine two jobs of the same algorithm differed by up to 20 %.

Sizes: 8 B to --max by --factor, in two launches: up to 64 KiB --small-iters ops, checked; from
256 KiB --large-iters (seconds each at 1 Gbit/s), unchecked. Or --sizes, one launch per size.
Ops are blocking (-z 2). The first job of the automatic (and --tuned) column in each range keeps
rank 0's probe and choices (COLL_DEBUG TOPO and TUNE lines), which the table's header repeats:
bench/scripts/selector_offline.py replays the cost model on them. Keep the printed layout (a
"netcluster H hosts x R ranks" header, a "size" row, digit-led rows) for it."""
import json
import statistics
import time

from .common import bus_factor
from .scenarios import NetclusterScenario

SMALL_MAX = 64 << 10
LARGE_MIN = 256 << 10
WITHIN = 1.10  # "within 10 % of the fastest"


def add_args(p):
    g = p.add_argument_group("--algos: forced all-reduce algorithms beside the automatic choice")
    g.add_argument("--algos", metavar='"ring direct ..."',
                   help="all-reduce algorithms to force, one column each, beside the automatic choice "
                        "(one host with --local N, or --netcluster H --per-host R)")
    g.add_argument("--in-job", action="store_true",
                   help="every column in one job per size range (all_reduce_perf -Q), --rounds inside it")
    g.add_argument("--tuned", action="store_true",
                   help="separate jobs: a column for COLL_TUNE=1 too (tuned in its first job, then reused)")
    g.add_argument("--max", default="256M", help="largest size when --sizes is not given (8 B up, x --factor)")
    g.add_argument("--factor", type=int, default=4)
    g.add_argument("--small-iters", type=int, default=100, help="ops per size up to 64 KiB (warm-up: --warmup, else 10)")
    g.add_argument("--large-iters", type=int, default=2, help="ops per size from 256 KiB (one warm-up)")


def size_text(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def launches(args, parse_bytes):
    """all_reduce_perf's size and count flags, one list per launch."""
    small_warmup = str(args.warmup if args.warmup is not None else 10)
    small = ["-n", str(args.small_iters), "-w", small_warmup, "-c", "1"]
    # One more op of 256 MiB at 1 Gbit/s takes seconds per column: large sizes go unchecked.
    large = ["-n", str(args.large_iters), "-w", "1", "-c", "0"]
    if args.size_list:
        return [["-b", str(s), "-e", str(s)] + (small if s <= SMALL_MAX else large) for s in args.size_list]
    top, f = parse_bytes(args.max), str(args.factor)
    out = [["-b", "8", "-e", str(min(top, SMALL_MAX)), "-f", f] + small]
    if top >= LARGE_MIN:
        out.append(["-b", str(LARGE_MIN), "-e", str(top), "-f", f] + large)
    return out


def column_env(column, work):
    env = {"COLL_DEBUG": "INFO", "COLL_DEBUG_SUBSYS": "TUNE,TOPO"}
    if column == "tuned":
        env.update(COLL_TUNE="1", COLL_TUNE_FILE=str(work / "tune.json"))  # measures once, then reuses
    elif column != "auto":
        env["COLL_ALGO"] = f"allreduce:{column}"
    return env


def rank0_choices(text):
    """Rank 0's probe and choice lines, as "# coll INFO ..." (collrun prefixes lines with [k])."""
    lines = []
    for line in text.splitlines():
        if line.startswith("[") and "] " in line:
            line = line.split("] ", 1)[1]
        if ("TOPO" in line or "TUNE" in line) and "[rank 0]" in line:
            lines.append("# " + line.strip())
    return lines


class Sweep:
    def __init__(self, scn, log):
        self.scn, self.log, self.args = scn, log, scn.args
        self.algos = self.args.algos.split()
        self.times = {}  # (column, size) -> [us], one per round (in-job: -Q's median over its rounds)
        self.choices, self.errors = [], []
        self.timeout = self.args.timeout

    def run(self, column, flags, extra=()):
        """One all_reduce_perf job; adds its out-of-place times under its column (in-job: under
        the algorithm -Q names at each row's end)."""
        out_json = self.scn.work / "algos.json"
        out_json.unlink(missing_ok=True)
        args = [self.scn.coll_prog("all_reduce")] + flags + ["-z", "2", "-J", str(out_json)] + list(extra)
        for _ in range(2):  # a second try only for a port race, not the system
            rc, text = self.scn.launch_coll(args, self.timeout, column_env(column, self.scn.work))
            if "Address already in use" not in text:
                break
        if rc != 0 or not out_json.exists():
            tail = "\n".join(text.splitlines()[-10:])
            self.errors.append(f"{column} {' '.join(flags)}: exit {rc}\n{tail}")
            self.log(f"[{self.scn.name}] {column} {' '.join(flags[:4])}: FAILED (exit {rc})")
            return
        if column in ("auto", "tuned") and not any(c[0] == (column, flags[1]) for c in self.choices):
            self.choices.append(((column, flags[1]), rank0_choices(text)))
        for line in out_json.read_text().splitlines():
            d = json.loads(line)
            if d["inplace"] or d["time_us"] is None:
                continue
            name = d.get("algo") or column
            if d["wrong"]:
                self.errors.append(f"{name} {d['size']} B: {d['wrong']} wrong elements")
                continue
            self.times.setdefault((name, d["size"]), []).append(d["time_us"])

    def measure(self, parse_bytes):
        groups = launches(self.args, parse_bytes)
        if self.args.in_job:
            for flags in groups:
                time.sleep(1)
                self.run("auto", flags, ["-Q", " ".join(["auto"] + self.algos), "-j", str(self.args.rounds)])
                self.log(f"[{self.scn.name}] in one job: {' '.join(flags[:4])} done")
            return
        columns = ["auto"] + (["tuned"] if self.args.tuned else []) + self.algos
        for r in range(self.args.rounds):
            for k in range(len(columns)):
                column = columns[(k + r) % len(columns)]
                for flags in groups:
                    time.sleep(1)
                    self.run(column, flags)
            self.log(f"[{self.scn.name}] round {r + 1} of {self.args.rounds} done")

    def median(self, column, size):
        v = self.times.get((column, size))
        return statistics.median(v) if v else None


def us_text(v):
    if v is None:
        return ""
    return f"{v:.0f}" if v >= 1000 else f"{v:.1f}" if v >= 100 else f"{v:.2f}"


def table(sweep):
    """The text: the header selector_offline.py reads, the choices, a time table with the best
    forced algorithm and auto/best per size, the count within 10 %, then busbw as comments."""
    scn, args, algos = sweep.scn, sweep.args, sweep.algos
    where = (f"netcluster {scn.hosts} hosts x {scn.per_host} ranks at {scn.rate}"
             if isinstance(scn, NetclusterScenario) else f"one host, {scn.n} ranks")
    how = "in one job per size range" if args.in_job else "in separate jobs"
    lines = [f"# {where}: all-reduce time (us, median of {args.rounds} rounds {how}; "
             f"-n {args.small_iters} up to 64 KiB, -n {args.large_iters} above)"]
    for _, found in sweep.choices:
        lines += found
    tuned = not args.in_job and args.tuned
    lines.append(f"{'size':>10} {'auto':>10}" + (f" {'tuned':>10}" if tuned else "")
                 + "".join(f" {a:>12}" for a in algos) + f" {'best':>12} {'auto/best':>10}"
                 + (f" {'tuned/best':>11}" if tuned else ""))
    sizes = sorted({s for c, s in sweep.times if c == "auto"})
    good = tuned_good = total = 0
    for size in sizes:
        forced = {a: sweep.median(a, size) for a in algos if sweep.median(a, size) is not None}
        best = min(forced, key=forced.get) if forced else None
        auto, tv = sweep.median("auto", size), sweep.median("tuned", size)
        ratio = auto / forced[best] if best else None
        tratio = tv / forced[best] if best and tv is not None else None
        if ratio is not None:
            total += 1
            good += ratio <= WITHIN
            tuned_good += tratio is not None and tratio <= WITHIN
        lines.append(f"{size:>10} {us_text(auto):>10}" + (f" {us_text(tv):>10}" if tuned else "")
                     + "".join(f" {us_text(sweep.median(a, size)):>12}" for a in algos)
                     + f" {best or '-':>12} {'-' if ratio is None else f'{ratio:.2f}':>10}"
                     + (f" {'-' if tratio is None else f'{tratio:.2f}':>11}" if tuned else ""))
    lines.append(f"# automatic (cost model) within 10% of the fastest forced algorithm at {good} of {total} sizes")
    if tuned:
        lines.append(f"# automatic with COLL_TUNE=1 (tuned in its first job, reused) within 10% at {tuned_good} "
                     f"of {total} sizes")
    f = bus_factor("all_reduce", scn.n)
    lines.append("# busbw, GB/s (size / time x 2(n-1)/n), of the same medians:")
    lines.append("# " + f"{'size':>8} {'auto':>10}" + "".join(f" {a:>12}" for a in algos))
    for size in sizes:
        cells = [sweep.median(c, size) for c in ["auto"] + algos]
        bw = ["" if t is None else f"{size / (t * 1e3) * f:.4g}" for t in cells]
        lines.append("# " + f"{size_text(size):>8} {bw[0]:>10}" + "".join(f" {b:>12}" for b in bw[1:]))
    for e in sweep.errors:
        lines.append("# error: " + e.splitlines()[0])
    return "\n".join(lines) + "\n"


def write_csv(path, sweep):
    with open(path, "w") as f:
        f.write("size_bytes,column,median_time_us,busbw_gbs,samples\n")
        for (column, size), v in sorted(sweep.times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            t = statistics.median(v)
            f.write(f"{size},{column},{t:.3f},{size / (t * 1e3) * bus_factor('all_reduce', sweep.scn.n):.6g},"
                    f"{' '.join(f'{x:.3f}' for x in v)}\n")


def algo_sweep(scn, out, log, parse_bytes):
    """Measures, writes <scenario>_algos.txt and .csv under out (and any launch's errors in
    <scenario>_algos.errors.txt), returns the text."""
    sweep = Sweep(scn, log)
    sweep.measure(parse_bytes)
    text = table(sweep)
    (out / f"{scn.name}_algos.txt").write_text(text)
    write_csv(out / f"{scn.name}_algos.csv", sweep)
    if sweep.errors:
        (out / f"{scn.name}_algos.errors.txt").write_text("\n\n".join(sweep.errors) + "\n")
    return text
