#!/usr/bin/python3
"""Offline check of the all-reduce cost model against logged selector tables.

Parses the selector sweep's logs (bench/compare.py --algos "ring direct hierarchical rhd tree rd"
--netcluster H --per-host R, its <scenario>_algos.txt; those of bench/scripts/selector_table.sh,
which it replaced, in docs/perf/selector/*.log; older ones in git, e.g.
`git show 741ac63:docs/perf/selector_2x2_final.log`): every start-up's
probed figures (TOPO lines) and the table of forced algorithms' measured times. For each
start-up it prices every algorithm with a Python copy of src/select/cost_model.cc and reports,
per size, the pick and whether the pick's measured time is within 10% of the fastest.

--loaded-us X replaces every start-up's loaded step (the busy step's cost) with X us: a what-if
for a probe that measured something else. E.g. X = what a ring step of a real op cost in the
same log (ring's time at 32-512 B over its 2(n-1) steps: 13.5-14.4 us on 2 x 2, 27.8-31.0 on
4 x 2 in the *_final logs of 741ac63).

usage: bench/scripts/selector_offline.py [--loaded-us X] [--verbose] LOG...
"""
import math
import re
import sys

ALGOS = ["ring", "direct", "hierarchical", "rhd", "tree", "rd"]
SLICE = 512 << 10  # COLL_SLICE_BYTES default (src/base/config.h)
ELEM = 4           # all_reduce_perf: float32


def parse(path):
    starts, table, cur = [], {}, None
    cols = None
    for line in open(path):
        m = re.search(r"link intra_host: alpha ([\d.]+) us, beta ([\d.]+) GB/s", line)
        if m:
            cur = {"ai": float(m[1]) * 1e-6, "bi": float(m[2]) * 1e9}
            starts.append(cur)
            continue
        m = re.search(r"link inter_host: alpha ([\d.]+) us, beta ([\d.]+) GB/s", line)
        if m:
            cur["ae"], cur["be"] = float(m[1]) * 1e-6, float(m[2]) * 1e9
            continue
        m = re.search(r"loaded step .*: ([\d.]+) us", line)
        if m:
            cur["loaded"] = float(m[1]) * 1e-6
            continue
        m = re.search(r"gamma ([\d.]+) GB/s", line)
        if m:
            cur["g"] = float(m[1]) * 1e9
            continue
        m = re.search(r"netcluster (\d+) hosts x (\d+) ranks", line)
        if m:
            hosts, per_host = int(m[1]), int(m[2])
        if line.split()[:1] == ["size"]:
            cols = line.split()
            continue
        if cols and re.match(r"\s*\d", line):
            f = line.split()
            # selector_table.sh's in-job logs have a "tuned" heading over blank cells
            named = [c for c in cols if c != "tuned"] if len(f) < len(cols) else cols
            row = {c: float(v) for c, v in zip(named, f) if c in ALGOS}
            missing = [a for a in ALGOS if a not in row]
            if missing:
                sys.exit(f"{path}: no column for {' '.join(missing)}: the model picks among all six "
                         f'(bench/compare.py --algos "{" ".join(ALGOS)}")')
            table[int(f[0])] = row
    return hosts, per_host, starts, table


# ---- patterns (src/algorithms/patterns) ----
def p2floor(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def log2floor(n):
    k = 0
    while (2 << k) <= n:
        k += 1
    return k


def real_rank(v, n):
    extra = n - p2floor(n)
    return 2 * v + 1 if v < extra else v + extra


def halving(v, p2, s):
    m = p2 >> (s + 1)
    base = v & ~(2 * m - 1)
    lower, upper = (base, base + m), (base + m, base + 2 * m)
    keeps_upper = (v & m) != 0
    return v ^ m, (lower if keeps_upper else upper)


def btree_node(v, n):
    parent, ch = -1, [-1, -1]
    if v == 0:
        top = 1
        while top < n:
            top <<= 1
        if n > 1:
            ch[0] = top >> 1
        return parent, ch
    bit = v & -v
    up = (v ^ bit) | (bit << 1)
    parent = up if up < n else (v ^ bit)
    return parent, ch


def tree_parent(tree, r, n):
    pos = r if tree == 0 else (n - 1 - r if n % 2 == 0 else (r - 1 + n) % n)
    par, _ = btree_node(pos, n)
    if tree == 0 or par < 0:
        return par
    return n - 1 - par if n % 2 == 0 else (par + 1) % n


def busiest(host_of, sends):
    H = max(host_of) + 1
    out, inn = [0.0] * H, [0.0] * H
    for a, b, share in sends:
        if host_of[a] != host_of[b]:
            out[host_of[a]] += share
            inn[host_of[b]] += share
    return max(out + inn)


def rhd_link(host_of):
    n = len(host_of)
    p2, steps = p2floor(n), log2floor(n)
    sends = []
    for s in range(steps):
        for v in range(p2):
            partner, (f, l) = halving(v, p2, s)
            sends.append((real_rank(v, n), real_rank(partner, n), 2 * (l - f) / p2))
    for r in range(0, 2 * (n - p2), 2):
        sends += [(r, r ^ 1, 1.0), (r ^ 1, r, 1.0)]
    return busiest(host_of, sends)


def tree_link(host_of):
    n = len(host_of)
    sends = []
    for t in range(2):
        for r in range(n):
            p = tree_parent(t, r, n)
            if p >= 0:
                sends += [(r, p, 0.5), (p, r, 0.5)]
    return busiest(host_of, sends)


# ---- message counts (src/algorithms/cost/message_count.cc) ----
def nslices(e, ps):
    return (e + ps - 1) // ps


def chunk_slices(count, k, ps):
    base, extra = count // k, count % k
    return extra * nslices(base + 1, ps) + (k - extra) * nslices(base, ps)


def chunk_first(count, n, c):
    base, extra = count // n, count % n
    return c * base + min(c, extra)


def msgs(algo, count, ps, n, H, L):
    if algo in ("ring", "direct"):
        return 2.0 * (n - 1) * chunk_slices(count, n, ps)
    if algo == "tree":
        return 2.0 * (n - 1) * chunk_slices(count, 2, ps)
    if algo == "hierarchical":
        base, extra = count // L, count % L
        parts = extra * chunk_slices(base + 1, H, ps) + (L - extra) * chunk_slices(base, H, ps)
        return (2.0 * H * (L - 1) + 2.0 * (H - 1)) * parts
    if algo == "rhd":
        p2, steps = p2floor(n), log2floor(n)
        start = lambda b: count if b == p2 else chunk_first(count, p2, b)
        h = 0
        for s in range(steps):
            for v in range(p2):
                _, (f, l) = halving(v, p2, s)
                h += nslices(start(l) - start(f), ps)
        return 2 * h + 2.0 * (n - p2) * nslices(count, ps)
    if algo == "rd":
        p2 = p2floor(n)
        return (p2 * log2floor(n) + 2.0 * (n - p2)) * nslices(count, ps)


EFF = 0.9  # kUnpipelinedLinkEfficiency


class Net:
    def __init__(self, st, H, L, S):
        self.n, self.H, self.L = H * L, H, L
        self.multi = H > 1
        self.link_bound = self.multi and st["be"] < st["bi"]
        self.ai, self.bi, self.be, self.g = st["ai"], st["bi"], st["be"], st["g"]
        self.S = S
        self.count = S // ELEM
        self.ps = max(1, SLICE // ELEM)
        self.host_of = [r // L for r in range(self.n)]
        step = st["loaded"] if st["loaded"] > 0 else st["ae"]
        self.ae = min(st["ae"], step)
        self.C = step - self.ae
        self.st = st

    def busy(self, algo):
        now = msgs(algo, self.count, 1 << 60, self.n, self.H, self.L)
        full = msgs(algo, max(self.count, 4 * self.n), 1 << 60, self.n, self.H, self.L)
        return min(1.0, now / full) if full > 0 else 1.0

    def step_any(self, f):
        return self.ae + f * self.C

    def step_intra(self, f):
        return self.step_any(f)

    def per_message(self):
        return self.ai / 4

    def extra_messages(self, local, remote):
        if remote == 0:
            return max(0.0, local - 1) * self.per_message()
        return local * self.per_message() + (remote - 1) * (self.ae + self.C)

    def total(self, latency, mem, link, cpu):
        if self.link_bound:
            return max(latency + mem + cpu, link)
        return latency + max(mem, link) + cpu


def log2ceil(v):
    return 0 if v <= 1 else math.ceil(math.log2(v))


def predict(x, algo):
    n, S = x.n, x.S
    if algo == "ring":
        share = 2 * (n - 1) / n * S
        return x.total(2 * (n - 1) * x.step_any(x.busy("ring")), share / x.bi, share / x.be, (n - 1) / n * S / x.g)
    if algo == "direct":
        per_rank = 2 * (n - 1) / n * S
        per_link = 2 * x.L * (n - x.L) / n * S / EFF
        lat = 2 * x.step_any(x.busy("direct")) + 2 * x.extra_messages(x.L - 1, n - x.L)
        return x.total(lat, per_rank / x.bi, per_link / x.be, (n - 1) / n * S / x.g)
    if algo == "hierarchical":
        H, L = x.H, x.L
        lat = 2 * x.step_intra(1) + 2 * (H - 1) * x.step_any(1)
        intra = 2 * (L - 1) / L * S / x.bi
        inter = 2 * (H - 1) / H * S / x.be
        red = ((L - 1) / L + (H - 1) / (H * L)) * S / x.g
        return x.total(lat, intra, inter, red)
    if algo == "tree":
        steps = 2 * log2ceil(n)
        return x.total(steps * x.step_any(x.busy("tree")), 2 * S / x.bi, tree_link(x.host_of) * S / x.be, S / x.g)
    if algo == "rhd":
        p = p2floor(n)
        steps = 2 * math.log2(p)
        fold = 0 if p == n else 2.0
        lat = steps * x.step_any(x.busy("rhd")) + fold * x.step_any(1)
        mem = (2 * (n - 1) / n + fold) * S / x.bi
        link = rhd_link(x.host_of) * S / x.be / EFF
        return x.total(lat, mem, link, (n - 1) / n * S / x.g)
    if algo == "rd":
        p = p2floor(n)
        steps = math.log2(p)
        crossing = min(steps, log2ceil(x.H))
        extra = 0 if p == n else 2 * (x.step_any(1) + S / min(x.be, x.bi))
        per_link = crossing * x.L * S / EFF
        lat = crossing * x.step_any(1) + (steps - crossing) * x.step_intra(1)
        return x.total(lat, steps * S / x.bi, per_link / x.be, steps * S / x.g) + extra


def main(argv):
    loaded, verbose, logs = None, False, []
    i = 0
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if argv else 2)
    while i < len(argv):
        if argv[i] == "--loaded-us":
            loaded = float(argv[i + 1]) * 1e-6
            i += 2
            continue
        if argv[i] == "--verbose":
            verbose = True
        else:
            logs.append(argv[i])
        i += 1
    for path in logs:
        H, L, starts, table = parse(path)
        for st in starts:
            st["loaded"] = loaded if loaded is not None else st["loaded"]
        sizes = sorted(s for s in table if not (H > 2 and s > 64 << 20))
        print(f"== {path} ({H}x{L}, loaded step {'as probed' if loaded is None else f'{loaded * 1e6:g} us'}, {len(starts)} start-ups, {len(sizes)} sizes)")
        for k, st in enumerate(starts):
            ok, misses = 0, []
            for S in sizes:
                x = Net(st, H, L, S)
                pred = {a: predict(x, a) for a in ALGOS}
                pick = min(ALGOS, key=lambda a: pred[a])
                row = table[S]
                best = min(ALGOS, key=lambda a: row[a])
                r = row[pick] / row[best]
                ok += r <= 1.10
                if r > 1.10:
                    misses.append(f"{S}:{pick}({r:.2f}, best {best})")
                if verbose:
                    print(f"  {S:>10} best {best:>12} {row[best]:>10.1f}  pick {pick:>12} {row[pick]:>10.1f}"
                          f"  {r:5.2f} {'ok' if r <= 1.10 else 'MISS'}  " +
                          " ".join(f"{a}={pred[a]*1e6:.0f}" for a in ALGOS))
            print(f" start-up {k+1} (ae {st['ae']*1e6:.1f} loaded {st['loaded']*1e6:.1f} ai {st['ai']*1e6:.1f}):"
                  f" {ok}/{len(sizes)}  misses {' '.join(misses) or '-'}")


if __name__ == "__main__":
    main(sys.argv[1:])
