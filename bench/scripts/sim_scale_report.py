#!/usr/bin/env python3
"""Tables and a plot from bench/scripts/sim_scale.sh's CSVs: each algorithm's simulated time
per (ranks, size), the selector's choice, and the size where tree stops beating ring."""
import argparse
import csv
import glob
import os
from collections import defaultdict

SIZES = [("8", 8), ("64K", 64 << 10), ("1M", 1 << 20), ("256M", 256 << 20)]


def fmt(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    points = defaultdict(dict)   # (ranks, bytes) -> algo -> sim_us
    chosen = {}                  # (ranks, bytes) -> (algo, model_us, sim_us)
    for path in glob.glob(os.path.join(a.dir, "points_*.csv")):
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
    crossover = {}
    for n in ranks:
        path = os.path.join(a.dir, f"sweep_{n}.csv")
        if not os.path.exists(path):
            continue
        t = defaultdict(dict)
        for r in load(path):
            if r["chosen"] == "0":
                t[int(r["bytes"])][r["algorithm"]] = float(r["sim_us"])
        sizes = sorted(t)
        last_tree = max((s for s in sizes if t[s].get("tree", 1e30) < t[s].get("ring", 1e30)), default=None)
        first_ring = min((s for s in sizes if last_tree is None or s > last_tree), default=None)
        crossover[n] = (last_tree, first_ring)
        lines.append(f"| {n} | {last_tree if last_tree is not None else 'never'} B | "
                     f"{first_ring if first_ring is not None else 'never'} B |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.dir, "tables.md"), "w") as f:
        f.write(text)
    print(text)
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
    png = os.path.join(a.dir, "sim_scale.png")
    fig.savefig(png, dpi=110)
    print(f"wrote {os.path.normpath(png)}")


if __name__ == "__main__":
    main()
