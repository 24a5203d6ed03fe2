#!/usr/bin/env python3
"""coll-sim's times against measured ones (bench/scripts/sim_validate.sh's CSVs).

Prints, per collective and size, each algorithm's measured time, simulated time and their
ratio, then the two figures issue 27 asks for: the share of (algorithm, size) points where the
simulation is within 15% of the measurement, and the share of sizes where both name the same
fastest algorithm. The cost model's figures are printed beside them for comparison.
With --markdown, the same as a Markdown table for docs/."""
import argparse
import csv
import sys
from collections import defaultdict


def load(path, key_time):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get("chosen", "0") == "1":
                continue
            rows[(r["collective"], r["algorithm"], int(r["bytes"]))] = r
    return rows


def fastest(times):
    return min(times, key=times.get) if times else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--measured", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--title", default="")
    ap.add_argument("--tolerance", type=float, default=0.15)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    meas, sim = load(a.measured, "measured_us"), load(a.sim, "sim_us")
    points = within = model_within = model_points = 0
    big_points = big_within = 0  # >= 64 KiB: where bytes, not scheduling, set the time
    sizes = same = model_same = near = model_near = 0
    by = defaultdict(dict)
    for (c, algo, b), r in meas.items():
        by[(c, b)][algo] = r
    out = sys.stdout
    print(f"# {a.title}" if not a.markdown else f"\n**{a.title}**\n", file=out)
    for coll in sorted({c for c, _ in by}):
        algos = sorted({al for (c, _), d in by.items() if c == coll for al in d})
        if a.markdown:
            print(f"\n{coll}: measured / simulated µs (sim/measured)\n", file=out)
            print("| size | " + " | ".join(algos) + " | fastest measured | fastest simulated |", file=out)
            print("|---:|" + "---|" * (len(algos) + 2), file=out)
        else:
            print(f"# {coll}: measured / simulated us (sim/measured)", file=out)
            print(f"{'size':>10} " + " ".join(f"{x:>26}" for x in algos) + "   fastest meas / sim", file=out)
        for b in sorted(b for c, b in by if c == coll):
            tm, ts, tmod, cells = {}, {}, {}, []
            for algo in algos:
                m = by[(coll, b)].get(algo)
                s = sim.get((coll, algo, b))
                if not m or not s:
                    cells.append("-")
                    continue
                mu, su, mo = float(m["measured_us"]), float(s["sim_us"]), float(s["model_us"])
                tm[algo], ts[algo] = mu, su
                if mo > 0:
                    tmod[algo] = mo
                    model_points += 1
                    model_within += abs(mo - mu) <= a.tolerance * mu
                points += 1
                within += abs(su - mu) <= a.tolerance * mu
                if b >= 65536:
                    big_points += 1
                    big_within += abs(su - mu) <= a.tolerance * mu
                cells.append(f"{mu:.1f} / {su:.1f} ({su / mu:.2f})")
            fm, fs, fmod = fastest(tm), fastest(ts), fastest(tmod)
            sizes += 1
            same += fm == fs
            model_same += fm == fmod
            # What picking by the simulation (or the model) would cost against the measured best.
            near += fs is not None and tm[fs] <= 1.10 * tm[fm]
            model_near += fmod is not None and tm[fmod] <= 1.10 * tm[fm]
            if a.markdown:
                print(f"| {b} | " + " | ".join(cells) + f" | {fm} | {fs} |", file=out)
            else:
                print(f"{b:>10} " + " ".join(f"{x:>26}" for x in cells) + f"   {fm} / {fs}", file=out)
    pct = lambda k, n: f"{k}/{n} ({100.0 * k / n:.0f}%)" if n else "0/0"
    end = "\n" if a.markdown else ""
    print(f"{end}simulated within {a.tolerance:.0%} of measured: {pct(within, points)} of (algorithm, size) points;"
          f" same fastest algorithm: {pct(same, sizes)} of sizes; the simulation's fastest measured within 10% of"
          f" the measured fastest: {pct(near, sizes)}", file=out)
    print(f"{end}at 64 KiB and above: simulated within {a.tolerance:.0%} at {pct(big_within, big_points)}", file=out)
    print(f"{end}(the cost model alone: within {a.tolerance:.0%} at {pct(model_within, model_points)};"
          f" same fastest at {pct(model_same, sizes)}; its fastest within 10% at {pct(model_near, sizes)})", file=out)


if __name__ == "__main__":
    main()
