#!/usr/bin/python3
"""Reads the op traces coll writes under COLL_TRACE_FILE (one Chrome trace per communicator and
rank) and says where the time went, or merges them into one file for chrome://tracing or
Perfetto (one process per communicator and rank).

    COLL_TRACE_FILE=/tmp/t <job>                       # writes /tmp/t.<pid>.c<n>.r<rank>.json
    tools/op_trace.py summary /tmp/t.*.json [--min-bytes 1M] [--rank 0]
    tools/op_trace.py merge all.json /tmp/t.*.json

summary prints, per file (one communicator on one rank), each op of at least --min-bytes: when it was issued and started
(milliseconds from the rank's first op), how long it waited in the queue, how long it ran, the
idle gap since the previous op finished, and its algorithm bandwidth; then the totals: time
running ops, time between them, and the run time of ops below the size threshold.
"""
import argparse
import json
import sys


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


def label_of(trace):
    d = trace.get("otherData", {})
    return f"rank {d.get('rank', 0)} of {d.get('communicator', '?')} #{d.get('number', 0)} (pid {d.get('pid', '?')})"


def load(paths):
    """[(rank, label, [op, ...])] per file (one communicator on one rank), ops in start order,
    each op a dict with ts/dur (us) and the args."""
    out = []
    for path in paths:
        with open(path) as f:
            trace = json.load(f)
        ops = [dict(e["args"], ts=e["ts"], dur=e["dur"]) for e in trace["traceEvents"]
               if e.get("ph") == "X" and e.get("tid") == 1]
        out.append((trace.get("otherData", {}).get("rank", 0), label_of(trace), sorted(ops, key=lambda o: o["ts"])))
    return sorted(out, key=lambda t: (t[1].split(" of ")[1], t[0]))


def summary(args):
    files = load(args.files)
    if not any(ops for _, _, ops in files):
        sys.exit("no ops in " + " ".join(args.files))
    for rank, label, ops in files:
        if (args.rank is not None and rank != args.rank) or not ops:
            continue
        zero = ops[0]["ts"] - ops[0]["queued_us"]
        print(f"# {label}: {len(ops)} ops; times in ms from its first op's issue")
        print(f"{'seq':>6} {'op':<14} {'bytes':>10} {'algorithm':<13} {'issued':>9} {'started':>9} "
              f"{'queued':>8} {'ran':>8} {'gap':>7} {'GB/s':>7}")
        busy = small = gaps = 0.0
        prev_end = None
        for o in ops:
            gap = (o["ts"] - prev_end) / 1e3 if prev_end is not None else 0.0
            prev_end = o["ts"] + o["dur"]
            busy += o["dur"] / 1e3
            gaps += max(gap, 0.0)
            if o["bytes"] < args.min_bytes:
                small += o["dur"] / 1e3
                continue
            issued = (o["ts"] - o["queued_us"] - zero) / 1e3
            gbps = o["bytes"] / (o["dur"] * 1e3) if o["dur"] > 0 else 0.0
            print(f"{o['sequence']:>6} {o['op']:<14} {o['bytes']:>10} {o['algorithm'][:13]:<13} {issued:>9.1f} "
                  f"{(o['ts'] - zero) / 1e3:>9.1f} {o['queued_us'] / 1e3:>8.1f} {o['dur'] / 1e3:>8.1f} "
                  f"{gap:>7.1f} {gbps:>7.3f}")
        print(f"# {label}: ran ops {busy:.1f} ms (below {args.min_bytes} B: {small:.1f} ms), "
              f"idle between ops {gaps:.1f} ms\n")


def merge(args):
    """One Chrome process per file (a communicator on a rank), named after both."""
    events = []
    for pid, path in enumerate(args.files):
        with open(path) as f:
            trace = json.load(f)
        for e in trace["traceEvents"]:
            e = dict(e, pid=pid)
            if e.get("name") == "process_name":
                e["args"] = {"name": label_of(trace)}
            events.append(e)
    with open(args.out, "w") as f:
        json.dump({"displayTimeUnit": "ms", "traceEvents": events}, f)
    print(f"{len(events)} events from {len(args.files)} files -> {args.out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("summary")
    s.add_argument("files", nargs="+")
    s.add_argument("--min-bytes", type=parse_bytes, default=0)
    s.add_argument("--rank", type=int)
    m = sub.add_parser("merge")
    m.add_argument("out")
    m.add_argument("files", nargs="+")
    args = p.parse_args()
    summary(args) if args.command == "summary" else merge(args)


if __name__ == "__main__":
    main()
