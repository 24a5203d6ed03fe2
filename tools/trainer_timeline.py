#!/usr/bin/python3
"""Renders trainer Chrome traces (Timeline::writeChromeTrace) as a PNG timeline.

usage: tools/trainer_timeline.py OUT.png TRACE.json [TRACE.json ...] [--steps 2] [--rank 0] [--title T]
       tools/trainer_timeline.py --pipeline P OUT.png TRACE.json [TRACE.json ...] [--steps 1]

One panel per trace (e.g. one all-reduce after backward, and bucketed overlap), with the
compute lane (forward, backward per layer, optimizer waits and updates) above the
communication lane (each bucket's all-reduce from launch to completion). Shows the last
--steps steps of each trace, on a common time scale starting at the first shown step.

--pipeline P draws the classic pipeline diagram of coll-train --stages P traces instead: one row
per stage (replica 0's ranks 0..P-1), each forward and backward of a micro-batch a box labelled
with its number, the gaps the bubble, and the stage's gradient all-reduces (replicas > 1) as a
strip under its row.
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"forward": "#4c72b0", "backward": "#55a868", "wait": "#dddddd", "update": "#c44e52",
           "end of step": "#8172b2", "bucket": "#dd8452"}


def colour(name):
    for key, c in COLOURS.items():
        if name.startswith(key):
            return c
    return "#999999"


def load(path, steps, rank):
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e["tid"] in (0, 1) and e.get("pid", 0) == rank]
    if not events:
        raise SystemExit(f"{path}: no events of rank {rank}")
    last = max(e["args"]["step"] for e in events)
    shown = [e for e in events if e["args"]["step"] > last - steps]
    t0 = min(e["ts"] for e in shown)
    return [(e["name"], e["tid"], (e["ts"] - t0) / 1e3, e["dur"] / 1e3) for e in shown]


def load_stage(path, steps, rank):
    """The compute events and bucket all-reduces of `rank`'s last `steps` steps, absolute times."""
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("pid", 0) == rank]
    if not events:
        raise SystemExit(f"{path}: no events of rank {rank} (was it written with coll-train --trace?)")
    last = max(e["args"]["step"] for e in events)
    return [e for e in events if e["args"]["step"] > last - steps and
            (e["name"].startswith(("forward", "backward")) or e["name"].startswith("bucket"))]


def draw_pipeline(a):
    panels = [(t, [load_stage(t, a.steps, r) for r in range(a.pipeline)]) for t in a.traces]
    fig, axes = plt.subplots(len(panels), 1, figsize=(13, 0.55 * a.pipeline * len(panels) + 1.4), squeeze=False)
    for ax, (path, stages) in zip(axes[:, 0], panels):
        t0 = min(e["ts"] for events in stages for e in events)
        for stage, events in enumerate(stages):
            y = a.pipeline - 1 - stage
            for e in events:
                start, dur = (e["ts"] - t0) / 1e3, e["dur"] / 1e3
                if e["name"].startswith("bucket"):
                    ax.broken_barh([(start, dur)], (y + 0.02, 0.12), facecolors=COLOURS["bucket"])
                    continue
                kind, micro = e["name"].split()[:2]
                ax.broken_barh([(start, dur)], (y + 0.18, 0.74), facecolors=COLOURS[kind], edgecolors="black",
                               linewidth=0.4)
                ax.text(start + dur / 2, y + 0.55, micro, ha="center", va="center", fontsize=6, color="white")
        ax.set_yticks([a.pipeline - 1 - s + 0.5 for s in range(a.pipeline)], [f"stage {s}" for s in range(a.pipeline)])
        ax.set_ylim(0, a.pipeline)
        ax.set_title(path.split("/")[-1], fontsize=9, loc="left")
        ax.set_xlabel("ms")
    handles = [matplotlib.patches.Patch(color=COLOURS[k], label=k) for k in ("forward", "backward", "bucket")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8)
    fig.suptitle(a.title or f"coll pipeline: {a.pipeline} stages, forward and backward per micro-batch",
                 x=0.01, ha="left", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    fig.savefig(a.out, dpi=110)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("traces", nargs="+")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--rank", type=int, default=0, help="the rank to draw (coll-train's traces hold every rank)")
    p.add_argument("--title", default=None)
    p.add_argument("--pipeline", type=int, default=0, metavar="P", help="draw the pipeline diagram of P stages")
    a = p.parse_args()
    if a.pipeline:
        return draw_pipeline(a)
    a.title = a.title or f"coll trainer timeline (rank {a.rank})"
    panels = [(t, load(t, a.steps, a.rank)) for t in a.traces]
    end = max(s + d for _, ev in panels for _, _, s, d in ev)
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 1.9 * len(panels) + 1.0), squeeze=False)
    for ax, (path, events) in zip(axes[:, 0], panels):
        for name, lane, start, dur in events:
            y = 1 if lane == 0 else 0
            ax.broken_barh([(start, max(dur, 0.05))], (y + 0.1, 0.8), facecolors=colour(name),
                           edgecolors="black", linewidth=0.3)
        ax.set_yticks([0.5, 1.5], ["all-reduce", "compute"])
        ax.set_xlim(0, end * 1.01)
        ax.set_title(path.split("/")[-1], fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("ms")
    handles = [matplotlib.patches.Patch(color=c, label=k) for k, c in COLOURS.items()]
    fig.legend(handles=handles, loc="lower center", ncol=6, fontsize=8)
    fig.suptitle(a.title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
