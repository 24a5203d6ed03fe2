"""Tables, CSV and PNG plots of a scenario's measurements; the headline across scenarios."""
import csv
import os
import re
import statistics
import sys

from .common import *  # noqa: F401,F403
from .copy_floor import copy_floor_lines
from .size_ceilings import size_ceiling_lines
from .tcp_floor import floor_lines


def human_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def cell(v):
    return "-" if v is None else f"{v:.4g}"


def unsupported(m, collective, system):
    return any(e.endswith("unsupported") for e in m.errors.get((collective, system), []))


def summary_rows(m, collective, systems, sizes):
    """Per size: each system's median busbw and time, the best peer, coll's ratio to it."""
    rows = []
    for size in sizes:
        bw = {s: m.median(m.busbw, collective, s, size) for s in systems}
        us = {s: m.median(m.time_us, collective, s, size) for s in systems}
        cpu = {s: m.median(m.cpu, collective, s, size) for s in systems}
        peers = {s: v for s, v in bw.items() if s not in COLL_SYSTEMS and v is not None}
        best = max(peers, key=peers.get) if peers else None
        ratio = bw["coll"] / peers[best] if best and peers[best] > 0 and bw.get("coll") else None
        mem_ratio = bw["coll-mem"] / peers[best] if best and peers[best] > 0 and bw.get("coll-mem") else None
        extra = {}  # the on-request systems: coll-ucx against coll (its transport is the question), torch-coll against the best peer
        if bw.get("coll-ucx") and bw.get("coll"):
            extra["ucx/coll"] = bw["coll-ucx"] / bw["coll"]
        if bw.get("torch-coll") and best and peers[best] > 0:
            extra["torch/best"] = bw["torch-coll"] / peers[best]
        rows.append({"size": size, "busbw": bw, "time_us": us, "cpu": cpu, "best": best, "ratio": ratio,
                     "mem_ratio": mem_ratio, "extra": extra})
    return rows


def in_place_lines(scn, collective, systems, rows):
    """torch's all_reduce works in place, MPI_Allreduce and the table's coll column out of place
    (twice the memory walked): where gloo is in the table, coll's in-place cell of the same runs
    beside it."""
    got = getattr(scn, "in_place_busbw", {})
    if collective != "all_reduce" or "gloo" not in systems or not got.get(("coll", rows[-1]["size"])):
        return []
    parts = []
    for r in rows:
        cells = got.get(("coll", r["size"]), [])
        busbw = statistics.median([b for b, _ in cells] or [0])
        cpus = [c for _, c in cells if c is not None]
        gloo, gloo_cpu = r["busbw"].get("gloo"), r["cpu"].get("gloo")
        text = f"{human_size(r['size'])} {busbw:.3g} GB/s" + (f" ({busbw / gloo:.2f} of gloo)" if gloo else "")
        if cpus:
            cpu = statistics.median(cpus)
            text += f", {cpu:.3g} CPU-s/GB" + (f" ({cpu / gloo_cpu:.2f} of gloo's)" if gloo_cpu else "")
        parts.append(text)
    return ["# coll in place, as torch's all_reduce (gloo's column) is, same runs: " + "; ".join(parts)]


def table_text(scn, m, collective, systems, rows):
    mem = "coll-mem" in systems
    extra = [k for k in ("ucx/coll", "torch/best") if any(k in r["extra"] for r in rows)]
    head = (f"{'size':>10} " + " ".join(f"{s:>10}" for s in systems) + f" {'coll/best':>10}"
            + (f" {'mem/best':>10}" if mem else "") + "".join(f" {k:>10}" for k in extra) + f" {'best peer':>9}")
    lines = [f"## {collective} ({scn.title}): median busbw, GB/s", head]
    for r in rows:
        cells = ["n/a" if unsupported(m, collective, s) else cell(r["busbw"][s]) for s in systems]
        lines.append(f"{human_size(r['size']):>10} " + " ".join(f"{c:>10}" for c in cells)
                     + f" {cell(r['ratio']):>10}" + (f" {cell(r['mem_ratio']):>10}" if mem else "")
                     + "".join(f" {cell(r['extra'].get(k)):>10}" for k in extra) + f" {r['best'] or '-':>9}")
    small = rows[0]
    lines.append(f"{'time, us':>10} " + " ".join(f"{cell(small['time_us'][s]):>10}" for s in systems)
                 + f"   (at {human_size(small['size'])})")
    if any(r["cpu"][s] is not None for r in rows for s in systems):
        lines.append("CPU-seconds of all ranks (user + system) per GB of buffer, median:")
        for r in rows:
            lines.append(f"{human_size(r['size']):>10} " + " ".join(f"{cell(r['cpu'][s]):>10}" for s in systems))
    lines += floor_lines(scn, m, collective, {s: rows[-1]["busbw"][s] for s in systems})
    lines += size_ceiling_lines(scn, m, collective, systems, rows)
    lines += copy_floor_lines(scn, m, collective, {s: rows[-1]["busbw"][s] for s in systems})
    lines += in_place_lines(scn, collective, systems, rows)
    ceiling = scn.ceiling(statistics.median(m.limits) if m.limits else None)
    for s in systems:
        over = [human_size(r["size"]) for r in rows if ceiling and (r["busbw"][s] or 0) > ceiling]
        if over:
            lines.append(f"# {s}: above what the links allow at {', '.join(over)}: not over the network?")
    for (coll_name, system), errs in sorted(m.errors.items()):
        if coll_name == collective and unsupported(m, collective, system):
            lines.append(f"# {system}: n/a, the backend has no {collective}")
        elif coll_name == collective:
            lines.append(f"# {system}: " + errs[0].splitlines()[0] + (f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""))
    return "\n".join(lines)


def write_summary_csv(path, systems, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["size_bytes"] + [f"{s}_busbw_gbs" for s in systems] + [f"{s}_time_us" for s in systems]
                   + ["best_peer", "coll_over_best_peer", "coll_mem_over_best_peer"]
                   + [f"{s}_cpu_s_per_gb" for s in systems])
        for r in rows:
            w.writerow([r["size"]] + [cell(r["busbw"][s]) for s in systems]
                       + [cell(r["time_us"][s]) for s in systems]
                       + [r["best"] or "", cell(r["ratio"]), cell(r["mem_ratio"])]
                       + [cell(r["cpu"][s]) for s in systems])


def write_raw_csv(path, m):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "collective", "system", "size_bytes", "time_us", "busbw_gbs", "wrong", "status",
                    "load1", "cpu_s_per_gb"])
        w.writerows(m.raw)


def plot(path, scn, collective, systems, rows, limit, load):
    try:
        import matplotlib
    except ImportError:  # the tables and CSVs are the result; the plot is a view of them
        print(f"no plot {path.name}: this python ({sys.executable}) lacks matplotlib "
              "(apt-get install python3-matplotlib, and run /usr/bin/python3)", flush=True)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in systems:
        pts = [(r["size"], r["busbw"][s]) for r in rows if r["busbw"][s]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=s, color=COLORS[s], linewidth=2.5 if s in COLL_SYSTEMS else 1.5)
    if limit:
        ax.axhline(limit, color="black", linestyle="--", linewidth=1,
                   label=f"{scn.limit_label} {limit:.3g} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xticks([r["size"] for r in rows], [human_size(r["size"]) for r in rows], rotation=30)
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes, nccl-tests' definition)")
    ax.set_ylabel("busbw (GB/s, median)")
    ax.set_title(f"{collective}, {scn.title}\nload average {load:.1f}; medians of interleaved rounds", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def report(scn, m, systems, collectives, out, rounds):
    limit = statistics.median(m.limits) if m.limits else None
    load = statistics.median(m.loads) if m.loads else 0.0
    header = (f"# {scn.title}; float32, sum, root 0; {rounds} interleaved rounds, medians; "
              f"load average {min(m.loads):.1f}-{max(m.loads):.1f} (median {load:.1f}) on "
              f"{os.cpu_count()} cores; {scn.limit_label}: {cell(limit)} GB/s")
    texts = [header]
    for collective in collectives:
        sizes = sorted({effective_size(collective, s, scn.n) for s in scn.sizes})
        rows = summary_rows(m, collective, systems, sizes)
        texts.append(table_text(scn, m, collective, systems, rows))
        write_summary_csv(out / f"{scn.name}_{collective}.csv", systems, rows)
        plot(out / f"{scn.name}_{collective}.png", scn, collective, systems, rows, limit, load)
    write_raw_csv(out / f"{scn.name}.csv", m)
    text = "\n\n".join(texts) + "\n"
    (out / f"{scn.name}.txt").write_text(text)
    errors = "\n".join(f"{c} {s}: {e}" for (c, s), errs in sorted(m.errors.items()) for e in errs
                       if not e.endswith("unsupported"))
    if errors:
        (out / f"{scn.name}.errors.txt").write_text(errors + "\n")
    return text


def headline(out):
    """Markdown: per scenario and collective, coll against the best peer at the smallest size
    (time, lower is better) and the largest (busbw), from the <scenario>_<collective>.csv files."""
    lines = ["| scenario | collective | smallest: coll time | best peer | coll/peer busbw "
             "| largest: coll busbw | best peer | coll/peer busbw |", "|---|---|---|---|---|---|---|---|"]
    names = [f"{s}_{c}" for s in ("local2", "local4", "net4x1", "net2x2") for c in COLLECTIVES]
    for name in names:
        path = out / f"{name}.csv"
        if not path.exists():
            continue
        rows = list(csv.DictReader(open(path)))
        small, large = rows[0], rows[-1]
        scenario, collective = name.split("_", 1)
        lines.append(f"| {scenario} | {collective} | {headline_cells(small, 'time_us', ' us')} "
                     f"| {headline_cells(large, 'busbw_gbs', ' GB/s')} |")
    return "\n".join(lines) + "\n"


def headline_cells(row, measure, unit):
    best = row["best_peer"]
    mine = row[f"coll_{measure}"]
    peer = row[f"{best}_{measure}"] if best else "-"
    return f"{human_size(int(row['size_bytes']))}: {mine}{unit} | {best or '-'} {peer}{unit} | {row['coll_over_best_peer']}"


def replot(out):
    """Redraws every <scenario>_<collective>.png from its medians CSV and the limit and load
    in <scenario>.txt's header (a figure's look can change without measuring again)."""
    for table in sorted(out.glob("*.txt")):
        header = table.read_text().splitlines()[0]
        load = float(re.search(r"median ([0-9.]+)\)", header)[1])
        limit_text = re.search(r": ([0-9.e+-]+|-) GB/s$", header)[1]
        limit = None if limit_text == "-" else float(limit_text)
        scn = ReplotScenario(table.stem, header)
        for collective in COLLECTIVES:
            path = out / f"{table.stem}_{collective}.csv"
            if path.exists():
                systems, rows = rows_from_csv(path)
                plot(out / f"{table.stem}_{collective}.png", scn, collective, systems, rows, limit, load)


class ReplotScenario:
    def __init__(self, name, header):
        self.name = name
        self.title = header[2:].split(";")[0]
        self.limit_label = "link rate" if name.startswith("net") else "memcpy (best of 1 and 2 threads)"


def rows_from_csv(path):
    """A medians CSV back into summary rows."""
    records = list(csv.DictReader(open(path)))
    systems = [k[: -len("_busbw_gbs")] for k in records[0] if k.endswith("_busbw_gbs")]
    number = lambda v: None if v in ("", "-") else float(v)
    rows = [{"size": int(r["size_bytes"]), "busbw": {s: number(r[f"{s}_busbw_gbs"]) for s in systems}}
            for r in records]
    return systems, rows
