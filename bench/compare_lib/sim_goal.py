"""coll-sim judged only where the machine repeats itself (sim.py goal, issue 52 item 5).

Two measurements of the same validation (sim.py validate, the same layout and rate, run apart)
decide which (collective, algorithm, size) points are repeatable: those whose two times agree
within --agree (10 %) of their mean. The reference time of a point is the mean of the two; the
simulated time the mean of the simulations given (each simulated on its own measurement's
probed topology). Three figures, each against its goal:
- the share of repeatable points simulated within --tolerance (15 %) of the reference (goal 85 %);
- the geometric-mean error from 64 KiB up, exp(mean |ln(sim / reference)|) - 1, over every point
  there and over the repeatable ones (goal at most 10 %);
- the share of (collective, size) cells where the simulation's fastest algorithm measured within
  10 % of the measured fastest (goal 90 %): what choosing by the simulation would cost. Where
  it prices several algorithms the same (within 0.1 %: on 4 x 1 at large sizes direct and ring
  both fill every link), it cannot choose, and the pick is the one coll's selector makes among
  them; the figure with ties broken by name is printed beside it. Beside it, the same share over
  only the cells whose measured fastest repeats (each measurement's fastest within 10 % of the
  fastest by the other's times), as the first two figures count only repeatable points.

A point is left out where either measurement or every simulation lacks it."""
import csv
import math
import sys
from collections import defaultdict

from .sim_report import BIG, load, pct


def _times(path, column):
    return {k: float(r[column]) for k, r in load(path).items()}


def _mean_of(tables, key):
    vals = [t[key] for t in tables if key in t]
    return sum(vals) / len(vals) if vals else None


def points(first, second, sims):
    """{(collective, algorithm, bytes): (first, second, reference, simulated)}."""
    out = {}
    for k in sorted(set(first) & set(second)):
        s = _mean_of(sims, k)
        if s is not None:
            out[k] = (first[k], second[k], (first[k] + second[k]) / 2, s)
    return out


def repeatable(p, agree):
    a, b, ref, _ = p
    return abs(a - b) <= agree * ref


def geo_error(ps):
    if not ps:
        return float("nan")
    return math.exp(sum(abs(math.log(s / ref)) for _, _, ref, s in ps) / len(ps)) - 1


TIE = 0.001  # simulated times this close are the same to the simulation


def selector_picks(paths):
    """(collective, bytes) -> the algorithm coll's selector chose there (coll-sim's "chosen" rows)."""
    picks = {}
    for path in paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("chosen", "0") == "1":
                    picks.setdefault((r["collective"], int(r["bytes"])), r["algorithm"])
    return picks


def _cells(pts):
    """(collective, bytes) -> {algorithm: point}."""
    cells = defaultdict(dict)
    for (c, algo, b), p in pts.items():
        cells[(c, b)][algo] = p
    return cells


def choice_cost(pts, picks=None):
    """Per (collective, bytes): the measured (reference) time of the simulation's fastest
    algorithm over the measured fastest's. Where the simulation prices several the same
    (within TIE), it cannot choose between them, and its choice is the one coll's selector makes
    among them (`picks`), else the first by name."""
    out = {}
    for key, d in _cells(pts).items():
        best_measured = min(p[2] for p in d.values())
        fastest_sim = min(p[3] for p in d.values())
        tied = sorted(al for al in d if d[al][3] <= fastest_sim * (1 + TIE))
        selector = (picks or {}).get(key)
        sim_pick = selector if selector in tied else tied[0]
        out[key] = (d[sim_pick][2] / best_measured, sim_pick, min(d, key=lambda al: d[al][2]))
    return out


def _fastest_holds(d, i, j):
    """Whether measurement i's fastest algorithm of a cell is within 10 % of the fastest by
    measurement j's times."""
    pick = min(d, key=lambda al: d[al][i])
    return d[pick][j] <= 1.10 * min(p[j] for p in d.values())


def measured_choice(pts):
    """How often each measurement's fastest is within 10 % of the other's fastest, by the other's
    times: the same figure as the simulation's, for a second measurement in its place."""
    counts = [0, 0]
    for d in _cells(pts).values():
        for i, j in ((0, 1), (1, 0)):
            counts[i] += _fastest_holds(d, i, j)
    return counts


def choice_repeats(d):
    """Whether a cell's measured fastest repeats: each measurement's fastest within 10 % of the
    fastest by the other's times."""
    return _fastest_holds(d, 0, 1) and _fastest_holds(d, 1, 0)


def report(pts, agree, tolerance, out=sys.stdout, title="", picks=None):
    """The three figures and, for each repeatable point the simulation misses, its line."""
    rep = {k: p for k, p in pts.items() if repeatable(p, agree)}
    hit = {k for k, p in rep.items() if abs(p[3] - p[2]) <= tolerance * p[2]}
    big_all = [p for k, p in pts.items() if k[2] >= BIG]
    big_rep = [p for k, p in rep.items() if k[2] >= BIG]
    cost = choice_cost(pts, picks)
    near = sum(1 for r, _, _ in cost.values() if r <= 1.10)
    untied = choice_cost(pts)  # ties broken by name: what the simulation alone would pick
    near_untied = sum(1 for r, _, _ in untied.values() if r <= 1.10)
    if title:
        print(f"# {title}", file=out)
    print(f"repeatable points (the two measurements within {agree:.0%}): {pct(len(rep), len(pts))}", file=out)
    print(f"  simulated within {tolerance:.0%} of them: {pct(len(hit), len(rep))} (goal 85%); below 64 KiB "
          f"{pct(sum(1 for k in hit if k[2] < BIG), sum(1 for k in rep if k[2] < BIG))}, from 64 KiB "
          f"{pct(sum(1 for k in hit if k[2] >= BIG), len(big_rep))}", file=out)
    print(f"geometric-mean error from 64 KiB: {geo_error(big_all):.1%} over all {len(big_all)} points, "
          f"{geo_error(big_rep):.1%} over the {len(big_rep)} repeatable (goal at most 10%)", file=out)
    print(f"simulation's pick measured within 10% of the measured fastest: {pct(near, len(cost))} of sizes (goal 90%; "
          f"ties broken by name instead of by coll's selector: {pct(near_untied, len(untied))})", file=out)
    self_near = measured_choice(pts)
    print(f"  (the ceiling: one measurement's fastest measured within 10% of the other's fastest by the other's "
          f"times at {pct(self_near[0], len(cost))} and {pct(self_near[1], len(cost))} of sizes)", file=out)
    steady = [key for key, d in _cells(pts).items() if choice_repeats(d)]
    print(f"  where the measured fastest repeats (each measurement's within 10% of the other's fastest by the "
          f"other's times): {pct(len(steady), len(cost))} of sizes; the simulation's pick within 10% at "
          f"{pct(sum(1 for key in steady if cost[key][0] <= 1.10), len(steady))} of them", file=out)
    misses = sorted(k for k in rep if k not in hit)
    if misses:
        print("repeatable points missed: collective algorithm bytes: first second simulated (sim/reference)", file=out)
        for k in misses:
            a, b, ref, s = rep[k]
            print(f"  {k[0]} {k[1]} {k[2]}: {a:.1f} {b:.1f} {s:.1f} ({s / ref:.2f})", file=out)
    bad = sorted((k, v) for k, v in cost.items() if v[0] > 1.10)
    if bad:
        print("sizes where the simulation's pick costs more than 10%: collective bytes: pick / measured best (ratio)",
              file=out)
        for (c, b), (r, pick, best) in bad:
            print(f"  {c} {b}: {pick} / {best} ({r:.2f})", file=out)


def add_args(p):
    p.add_argument("first", help="measured_<layout>.csv of one validation")
    p.add_argument("second", help="measured_<layout>.csv of another of the same layout")
    p.add_argument("--sim", action="append", required=True,
                   help="sim_<layout>.csv (give each measurement's; their mean is used)")
    p.add_argument("--agree", type=float, default=0.10)
    p.add_argument("--tolerance", type=float, default=0.15)
    p.add_argument("--title", default="")


def goal(a):
    first, second = _times(a.first, "measured_us"), _times(a.second, "measured_us")
    sims = [_times(s, "sim_us") for s in a.sim]
    pts = points(first, second, sims)
    if not pts:
        sys.exit(f"no (collective, algorithm, size) point is in {a.first}, {a.second} and a simulation")
    report(pts, a.agree, a.tolerance, title=a.title, picks=selector_picks(a.sim))
