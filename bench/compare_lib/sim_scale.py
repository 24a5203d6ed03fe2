"""coll-sim at scale (sim.py scale, issue 27): all-reduce on hosts of 8 ranks behind a 2:1
oversubscribed fat tree (16 hosts per leaf), 100 Gbit/s per host, from 16 to 16,384 ranks: every
algorithm at 8 B, 64 KiB, 1 MiB and 256 MiB, the selector's choice, and ring against tree over a
full size sweep for the crossover. Writes points_<ranks>_<size>.csv, sweep_<ranks>.csv and
runs.log (each run's wall time and peak memory), then tables.md and, with matplotlib,
sim_scale.png (--report-only: only those two, from the CSVs already there)."""
import csv
import glob
import os
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZES = [("8", 8), ("64K", 64 << 10), ("1M", 1 << 20), ("256M", 256 << 20)]
# The modelled cluster: what a 100 Gbit/s Ethernet cluster with coll's CPU data path would show.
CLUSTER = ["--per-host", "8", "--link", "100gbit", "--hosts-per-leaf", "16", "--oversubscription", "2",
           "--inter-alpha-us", "5"]


def add_args(p):
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--out", default=str(ROOT / "docs/perf/sim_scale"))
    p.add_argument("--ranks", default="16 64 256 1024 4096 16384")
    p.add_argument("--report-only", action="store_true", help="only tables.md and the plot, from --out's CSVs")


def run(a):
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sim = str(Path(a.build) / "bin/coll-sim")
    with open(out / "runs.log", "w") as log:
        for n in a.ranks.split():
            hosts = str(int(n) // 8)
            for label, _ in SIZES:
                subprocess.run(["/usr/bin/time", "-f", f"# {n} ranks, {label}: %e s wall, %M KB peak", sim,
                                "--hosts", hosts] + CLUSTER + ["-b", label, "-e", label, "--algo", "all", "--stats",
                                                              "--csv", str(out / f"points_{n}_{label}.csv")],
                               stdout=log, stderr=subprocess.STDOUT, check=True)
                log.flush()
            # ring against tree over the whole range, for where one overtakes the other
            subprocess.run([sim, "--hosts", hosts] + CLUSTER + ["-b", "8", "-e", "256M", "-f", "4", "--algo",
                                                                "ring,tree", "--csv", str(out / f"sweep_{n}.csv")],
                           stdout=log, stderr=subprocess.STDOUT, check=True)
            log.flush()
            print(f"{n} ranks done", flush=True)
    report(out)


def fmt(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def report(out):
    """Each algorithm's simulated time per (ranks, size), the selector's choice, and the size
    where tree stops beating ring: tables.md and sim_scale.png under out."""
    out = str(out)
    points = defaultdict(dict)   # (ranks, bytes) -> algo -> sim_us
    chosen = {}                  # (ranks, bytes) -> (algo, model_us, sim_us)
    for path in glob.glob(os.path.join(out, "points_*.csv")):
        for r in load(path):
            key = (int(r["ranks"]), int(r["bytes"]))
            if r["chosen"] == "1":
                chosen[key] = (r["algorithm"], float(r["model_us"]), float(r["sim_us"]))
                points[key].setdefault(r["algorithm"], float(r["sim_us"]))  # a run of a few algorithms
            else:
                points[key][r["algorithm"]] = float(r["sim_us"])
    ranks = sorted({k[0] for k in points})
    algos = sorted({al for d in points.values() for al in d})
    lines = ["# coll-sim at scale: all-reduce, hosts of 8 ranks, 100 Gbit/s per host, 16 hosts per leaf, 2:1\n"]
    for label, b in SIZES:
        lines.append(f"\n## {label}\n")
        lines.append("| ranks | " + " | ".join(algos) + " | selector's choice (model / simulated) | fastest simulated | choice / fastest |")
        lines.append("|---:|" + "---:|" * len(algos) + "---|---|---:|")
        for n in ranks:
            d = points.get((n, b), {})
            cells = [fmt(d[al]) if al in d else "-" for al in algos]
            best = min(d, key=d.get) if d else "-"
            c = chosen.get((n, b))
            choice = f"{c[0]} ({fmt(c[1])} / {fmt(c[2])})" if c else "-"
            ratio = f"{c[2] / d[best]:.2f}" if c and d else "-"
            lines.append(f"| {n} | " + " | ".join(cells) + f" | {choice} | {best} | {ratio} |")
    lines.append("\n## Where tree stops beating ring (simulated, sizes by factors of 4)\n")
    lines.append("| ranks | tree faster up to | ring faster from |")
    lines.append("|---:|---:|---:|")
    for n in ranks:
        path = os.path.join(out, f"sweep_{n}.csv")
        if not os.path.exists(path):
            continue
        t = defaultdict(dict)
        for r in load(path):
            if r["chosen"] == "0":
                t[int(r["bytes"])][r["algorithm"]] = float(r["sim_us"])
        sizes = sorted(t)
        last_tree = max((s for s in sizes if t[s].get("tree", 1e30) < t[s].get("ring", 1e30)), default=None)
        first_ring = min((s for s in sizes if last_tree is None or s > last_tree), default=None)
        lines.append(f"| {n} | {last_tree if last_tree is not None else 'never'} B | "
                     f"{first_ring if first_ring is not None else 'never'} B |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write(text)
    print(text)
    plot(out, points, chosen, ranks, algos)


def plot(out, points, chosen, ranks, algos):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot (apt-get install python3-matplotlib)")
        return
    fig, axes = plt.subplots(1, len(SIZES), figsize=(18, 4.5))
    for ax, (label, b) in zip(axes, SIZES):
        for al in algos:
            xs = [n for n in ranks if al in points.get((n, b), {})]
            ax.plot(xs, [points[(n, b)][al] for n in xs], marker="o", label=al)
        xs = [n for n in ranks if (n, b) in chosen]
        ax.scatter(xs, [chosen[(n, b)][2] for n in xs], s=140, facecolors="none", edgecolors="black",
                   label="selector's choice")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"all-reduce {label}")
        ax.set_xlabel("ranks (hosts x 8)")
        ax.set_ylabel("simulated time (us)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("coll-sim: 100 Gbit/s per host, 16 hosts per leaf, 2:1 oversubscribed")
    fig.tight_layout()
    png = os.path.join(out, "sim_scale.png")
    fig.savefig(png, dpi=110)
    print(f"wrote {os.path.normpath(png)}")
