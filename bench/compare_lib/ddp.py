"""compare.py --ddp: torch's DistributedDataParallel step (bench/torch_ddp_step.py, a
29 M-parameter MLP, DDP's 25 MiB buckets) under torch.distributed backend "coll" beside
"gloo": the same model, the same ranks, interleaved rounds, medians. The step's collectives are
what a training job's are; --batch 2 makes the step bound by them.

OMP_NUM_THREADS=1: the ranks share this machine's cores, and torch's own thread pool per rank
would oversubscribe them further, whichever backend."""
import re
import statistics

from .common import ROOT, number_after, torch_env, torch_has_coll, torch_version, write_mode_table
from .step_bound import bound_lines, bound_ms, ring_rate, wire_ms

BACKENDS = ["coll", "gloo"]


def add_args(p):
    g = p.add_argument_group("--ddp: torch DDP step time, backend coll beside gloo")
    g.add_argument("--ddp", action="store_true",
                   help="the DDP step instead of the collectives (--local N or --netcluster H --per-host R)")
    g.add_argument("--batch", type=int, default=32, help="per rank (2: the step bound by communication)")
    g.add_argument("--steps", type=int, default=5, help="timed steps per launch, after 2 untimed")
    g.add_argument("--ddp-parts", action="store_true",
                   help="each round also times coll's buckets (torch_ddp_step.py --parts): when each is issued, "
                        "and what the step does after the last; the table adds the ceiling with the step's own "
                        "compute")



def ddp_steps(scn, out, log):
    """Rounds of (coll, gloo), the order alternating; writes <scenario>_ddp.txt, returns it."""
    args = scn.args
    py = args.torch_python
    if not torch_has_coll(py, scn.build):
        raise OSError(f"backend coll cannot run under {py}: build with libtorch-dev installed (Debian's python), or "
                      "pip install coll into the venv of --torch-python")
    version = torch_version(py)
    got = {(b, k): [] for b in BACKENDS for k in ("step_ms", "forward_ms", "params")}
    errors = []
    ring_rates = []
    parts = []  # per round: (issue ms of each bucket, bytes of each, tail ms)
    for rnd in range(args.rounds):
        ring_rates.append(ring_rate(scn))
        runs = BACKENDS[rnd % 2:] + BACKENDS[:rnd % 2] + (["coll-parts"] if args.ddp_parts else [])
        for run in runs:
            backend = run.split("-")[0]
            cmd = [py, str(ROOT / "bench/torch_ddp_step.py"), "--backend", backend,
                   "--steps", str(args.steps), "--warmup", "2", "--batch", str(args.batch)]
            cmd += ["--parts"] if run == "coll-parts" else []
            env = {**torch_env(py, scn.build, backend), "OMP_NUM_THREADS": "1"}
            rc, text = scn.launch_ranks(cmd, args.timeout, env)
            step, fwd = number_after(text, "step_ms"), number_after(text, "forward_ms")
            found = bucket_parts(text) if run == "coll-parts" else step
            if rc != 0 or found is None:
                errors.append(f"round {rnd + 1} {run}: exit {rc}\n" + "\n".join(text.splitlines()[-10:]))
            elif run == "coll-parts":
                parts.append(found)
            else:
                got[(backend, "step_ms")].append(step)
                got[(backend, "forward_ms")].append(fwd)
                got[(backend, "params")].append(number_after(text, "params"))
            log(f"[{scn.name}] round {rnd + 1} ddp {run}: " + ("ok" if rc == 0 else f"exit {rc}"))
    med = {k: statistics.median(v) if v else None for k, v in got.items()}
    ratio = lambda a, b: f"{a / b:.3f}" if a and b else "-"
    cell = lambda v: "-" if v is None else f"{v:.1f}"
    lines = [f"# torch.distributed DDP, {scn.title}, torch {version} ({py}), {args.rounds} rounds, medians",
             f"{'measure':<40} {'coll':>10} {'gloo':>10} {'coll/gloo':>9}"]
    for key, what in (("step_ms", f"DDP step, 29M-param MLP, batch {args.batch} (ms)"),
                      ("forward_ms", "  of it the forward pass (ms)")):
        c, g = med[("coll", key)], med[("gloo", key)]
        lines.append(f"{what:<40} {cell(c):>10} {cell(g):>10} {ratio(c, g):>9}")
    params = med[("coll", "params")] or med[("gloo", "params")]
    forwards = [x for x in (med[("coll", "forward_ms")], med[("gloo", "forward_ms")]) if x]
    lines += bound_lines(scn, {"coll": med[("coll", "step_ms")], "gloo": med[("gloo", "step_ms")]},
                         min(forwards) if forwards else None, params * 4 if params else None, ring_rates, width=40)
    if parts:
        lines += parts_lines(scn, parts, {"coll": med[("coll", "step_ms")], "gloo": med[("gloo", "step_ms")]},
                             [r for r in ring_rates if r],
                             bound_ms(scn, min(forwards) if forwards else None, params * 4 if params else None))
    for (backend, key), v in sorted(got.items()):
        if key != "params":
            lines.append(f"# {key} {backend}, each round: " + " ".join(cell(x) for x in v))
    if getattr(scn, "hosts", 1) > 1:
        lines.append("# bare TCP ring, each round (MB/s a stream): " +
                     " ".join(f"{r / 1e6:.1f}" if r else "-" for r in ring_rates))
    return write_mode_table(out, f"{scn.name}_ddp", lines, errors)


def bucket_parts(text):
    """(issue ms of each bucket, bytes of each, tail ms, end ms of each or None) from a --parts
    run's line, or None."""
    m = re.search(r"issue_ms ([0-9.,]+) bucket_bytes ([0-9,]+) tail_ms ([0-9.]+)(?: end_ms ([0-9.,]+))?", text)
    if not m:
        return None
    ends = [float(x) for x in m[4].split(",")] if m[4] else None
    return [float(x) for x in m[1].split(",")], [int(x) for x in m[2].split(",")], float(m[3]), ends


def parts_lines(scn, parts, steps, rates, bound):
    """--ddp-parts: the ceiling with the step's own compute. DDP hands bucket k to the backend
    at issue_k (the backward pass has made its gradients), and the step goes on tail ms after
    the last all-reduce (the copy back into the gradients, the optimizer's step). With the wire
    never idle after issue_k and every byte at the bare-TCP rate, the step ends no sooner than
    issue_k + the wire time of buckets k.. + tail, for every k: the largest of these is a
    ceiling that counts what the 2 shared cores make the backward pass and the tail cost. (The
    hook is Python: its divide and GIL time on the autograd thread may delay later issues a
    little against DDP's built-in path, so the ceiling may sit a little high.)"""
    hosts = getattr(scn, "hosts", 1)
    if hosts < 2 or not rates:
        return ["# --ddp-parts: no ceiling (one host, or no bare-TCP rate)"]
    # The rounds whose buckets (sizes, in issue order) are the most common layout.
    layouts = [tuple(p[1]) for p in parts]
    layout = max(set(layouts), key=layouts.count)
    kept = [p for p in parts if tuple(p[1]) == layout]
    n, sizes = len(layout), list(layout)
    issue = [statistics.median(p[0][k] for p in kept) for k in range(n)]
    tail = statistics.median(p[2] for p in kept)
    rate = statistics.median(rates)
    ends = [issue[k] + wire_ms(hosts, sum(sizes[k:]), rate) for k in range(n)]
    k = max(range(n), key=ends.__getitem__)
    total = ends[k] + tail
    lines = ["# coll's buckets (--ddp-parts, medians of the rounds): issued at " +
             ", ".join(f"{t:.1f}" for t in issue) + " ms, of " + ", ".join(f"{b / 1e6:.1f}" for b in sizes) +
             f" MB; after the last all-reduce the step takes {tail:.1f} ms more",
             f"{'ceiling with the step compute (ms)':<40} {total:>10.1f}   (bucket {k} issued at {issue[k]:.1f} + "
             f"buckets {k}.. at bare TCP {ends[k] - issue[k]:.1f} + the tail {tail:.1f})",
             f"{'step / ceiling with the step compute':<40} " +
             " ".join(f"{(s / total):>10.3f}" if s else f"{'-':>10}" for s in steps.values())]
    if bound:
        lines.append(f"{'  that ceiling / the bound':<40} {total / bound:>10.3f}   (the goal: a step within 1.10 of "
                     f"the bound, {1.10 * bound:.1f} ms)")
    lines += wire_lines(hosts, kept, issue, sizes, rate)
    if len(kept) < len(parts):
        lines.append(f"# --ddp-parts: {len(parts) - len(kept)} round(s) with other buckets left out")
    lines.append("# --ddp-parts each round: " + "; ".join(
        "issue " + ",".join(f"{t:.1f}" for t in p[0]) + f" tail {p[2]:.1f}" for p in parts))
    return lines


def wire_lines(hosts, kept, issue, sizes, rate):
    """Each bucket's all-reduce from when the wire could take it (issued, and the bucket before
    done: the backend runs them in order) to its end, beside the bare-TCP time of its bytes."""
    if any(p[3] is None for p in kept):
        return []
    ends = [statistics.median(p[3][k] for p in kept) for k in range(len(sizes))]
    cells = []
    for k, size in enumerate(sizes):
        start = max(issue[k], ends[k - 1]) if k else issue[k]
        bare = wire_ms(hosts, size, rate)
        cells.append(f"{k}: {start:.1f}-{ends[k]:.1f} ms, {ends[k] - start:.1f} against bare {bare:.1f} "
                     f"({(ends[k] - start) / bare:.3f})")
    return ["# each bucket's all-reduce (from issue, or the bucket before's end, to its end): " + "; ".join(cells)]

