"""compare.py --tf: a Keras training step (bench/tf_step.py: MNIST-DNN's shape, 17.1 M
parameters at --tf-width 4096) under coll.tensorflow beside TensorFlow's
MultiWorkerMirroredStrategy (its ring all-reduce over gRPC, TF_CONFIG made per rank): the same
model, global batch and custom loop, the same ranks, interleaved rounds, medians. On netcluster
the table adds the step's bound: the forward pass plus the gradients' all-reduce at the link
rate, 2(H-1)/H of the gradient bytes each way on every host's link (H hosts), which no
algorithm can beat (docs/perf/ddp defines it so)."""
import re
import statistics

from .common import ROOT, number_after, write_mode_table
from .step_bound import bound_lines, bound_ms, ring_rate, wire_ms

SYSTEMS = ["coll", "mwms"]
PARTS = ("backward_ms", "allreduce_ms", "update_ms", "parts_step_ms", "big_ready_ms", "largest_bytes", "early_bytes")


def add_args(p):
    g = p.add_argument_group("--tf: Keras step time, coll.tensorflow beside MultiWorkerMirroredStrategy")
    g.add_argument("--tf", action="store_true", help="the Keras step (--local N or --netcluster H --per-host R)")
    g.add_argument("--tf-python", metavar="PY", help="a venv's python with TensorFlow and coll pip-installed")
    g.add_argument("--tf-width", type=int, default=4096, help="hidden layer width")
    g.add_argument("--tf-bucket-bytes", default=str(25 << 20), metavar="B",
                   help="coll's DistributedOptimizer buckets: bytes, or auto (sized from the links)")
    g.add_argument("--tf-parts", action="store_true",
                   help="each round also takes coll's step apart (tf_step.py --mode coll-parts: clocks inside "
                        "the step between the gradients, their all-reduce and the update); the table adds the "
                        "ceiling with the step's own compute")



def tf_steps(scn, out, log):
    args = scn.args
    if not args.tf_python:
        raise OSError("--tf needs --tf-python: a venv's python with TensorFlow and coll pip-installed")
    got = {(s, k): [] for s in SYSTEMS for k in ("step_ms", "forward_ms", "params")}
    parts = {k: [] for k in PARTS}
    errors = []
    hosts = getattr(scn, "hosts", 1)
    addr = (lambda r: scn.addr(r // scn.per_host)) if hosts > 1 or hasattr(scn, "cluster") else (lambda r: "127.0.0.1")
    ring_rates = []
    auto_cut = []  # what bucket_bytes="auto" measured and cut, as the coll runs print it
    for rnd in range(args.rounds):
        ring_rates.append(ring_rate(scn))
        for system in SYSTEMS[rnd % 2:] + SYSTEMS[:rnd % 2]:
            cmd = [args.tf_python, str(ROOT / "bench/tf_step.py"), "--mode", system, "--batch", str(args.batch),
                   "--width", str(args.tf_width), "--steps", str(args.steps), "--warmup", "2"]
            if system == "coll":
                cmd += ["--bucket-bytes", args.tf_bucket_bytes]
            if system == "mwms":
                base = scn.next_port() + 100
                scn.port += scn.n
                cmd += ["--workers", ",".join(f"{addr(r)}:{base + r}" for r in range(scn.n))]
            rc, text = scn.launch_ranks(cmd, args.timeout, {"OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"})
            if rc != 0 or number_after(text, "step_ms") is None:
                errors.append(f"round {rnd + 1} {system}: exit {rc}\n" + "\n".join(text.splitlines()[-10:]))
            else:
                for k in ("step_ms", "forward_ms", "params"):
                    got[(system, k)].append(number_after(text, k))
                auto_cut += re.findall(r"\(alpha [^)]*\)", text)
            log(f"[{scn.name}] round {rnd + 1} tf {system}: " + ("ok" if rc == 0 else f"exit {rc}"))
        if args.tf_parts:
            cmd = [args.tf_python, str(ROOT / "bench/tf_step.py"), "--mode", "coll-parts", "--batch",
                   str(args.batch), "--width", str(args.tf_width), "--steps", str(args.steps), "--warmup", "2",
                   "--bucket-bytes", args.tf_bucket_bytes]
            rc, text = scn.launch_ranks(cmd, args.timeout, {"OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"})
            for k in parts:
                if number_after(text, k) is not None:
                    parts[k].append(number_after(text, k))
            log(f"[{scn.name}] round {rnd + 1} tf coll-parts: " + ("ok" if rc == 0 else f"exit {rc}"))
    med = {k: statistics.median(v) if v else None for k, v in got.items()}
    cell = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    c, m = med[("coll", "step_ms")], med[("mwms", "step_ms")]
    lines = [f"# Keras step, {scn.title}, width {args.tf_width}, batch {args.batch} per rank, {args.rounds} rounds, "
             f"medians; coll's buckets {args.tf_bucket_bytes}" + (f" {auto_cut[-1]}" if auto_cut else ""),
             f"{'measure':<44} {'coll':>10} {'mwms':>10} {'coll/mwms':>9}",
             f"{'step (ms)':<44} {cell(c):>10} {cell(m):>10} {(f'{c / m:.3f}' if c and m else '-'):>9}",
             f"{'  of it the forward pass (ms)':<44} {cell(med[('coll', 'forward_ms')]):>10} "
             f"{cell(med[('mwms', 'forward_ms')]):>10}"]
    params = med[("coll", "params")] or med[("mwms", "params")]
    forwards = [x for x in (med[("coll", "forward_ms")], med[("mwms", "forward_ms")]) if x]
    lines += bound_lines(scn, {"coll": c, "mwms": m}, min(forwards) if forwards else None,
                         params * 4 if params else None, ring_rates)
    if parts["backward_ms"] and parts["allreduce_ms"]:
        lines += parts_lines(parts, hosts, params * 4 if params else None, [r for r in ring_rates if r],
                             {"coll": c, "mwms": m}, bound_ms(scn, min(forwards) if forwards else None,
                                                              params * 4 if params else None))
    if hosts > 1:
        lines.append("# bare TCP ring, each round (MB/s a stream): " +
                     " ".join(f"{r / 1e6:.1f}" if r else "-" for r in ring_rates))
    for (system, key), v in sorted(got.items()):
        if key != "params":
            lines.append(f"# {key} {system}, each round: " + " ".join(cell(x) for x in v))
    return write_mode_table(out, f"{scn.name}_tf", lines, errors)


def parts_lines(parts, hosts, grad_bytes, rates, steps, bound):
    """--tf-parts: coll's step taken apart by clocks inside it, and the ceiling with the step's
    own compute: the largest variable's gradient as the step computed it (every rank at once,
    the slowest; one tensor, which the backward pass makes whole: its all-reduce cannot start
    before), then the wire at the bare-TCP rate for every byte not made before it (the backward
    pass's rest may overlap the wire), then that variable's share of the update (which cannot
    start before its all-reduce ends). What a backend as fast as bare TCP would make of this step
    on these cores; beside the bound's 1.15 (issue 50)."""
    med = {k: statistics.median(v) for k, v in parts.items() if v}
    back, red, upd = med["backward_ms"], med["allreduce_ms"], med.get("update_ms")
    big = med.get("big_ready_ms", back)
    lines = ["# coll's step apart (--tf-parts: clocks inside the step, medians of the rounds):",
             f"{'  gradients, slowest rank (ms)':<44} {back:>10.1f}"]
    if "big_ready_ms" in med:
        lines.append(f"{'  of it until the largest one exists (ms)':<44} {big:>10.1f}")
    lines.append(f"{'  their all-reduce (ms)':<44} {red:>10.1f}")
    if upd is not None:
        lines.append(f"{'  the update, slowest rank (ms)':<44} {upd:>10.1f}")
    if "parts_step_ms" in med:
        lines.append(f"{'  the step with the clocks (ms)':<44} {med['parts_step_ms']:>10.1f}")
    if hosts > 1 and grad_bytes and rates:
        rate = statistics.median(rates)
        wire = wire_ms(hosts, grad_bytes, rate)
        lines.append(f"{'  all-reduce / bare TCP all-reduce':<44} {red / wire:>10.3f}   (bare TCP {wire:.1f} ms)")
        if upd is not None and "largest_bytes" in med:
            largest, early = med["largest_bytes"], med.get("early_bytes", 0)
            late_wire = wire_ms(hosts, grad_bytes - early, rate)
            update = upd * largest / grad_bytes
            total = big + late_wire + update
            lines.append(f"{'ceiling with the step compute (ms)':<44} {total:>10.1f}   (the largest gradient at "
                         f"{big:.1f} + all-reduce at bare TCP of all but the {early / 1e6:.2f} MB made before it "
                         f"{late_wire:.1f} + its update {update:.1f})")
            ratios = " ".join(f"{(s / total):>10.3f}" if s else f"{'-':>10}" for s in steps.values())
            lines.append(f"{'step / ceiling with the step compute':<44} {ratios}")
            if bound:
                lines.append(f"{'  that ceiling / the bound':<44} {total / bound:>10.3f}   (the goal: a step "
                             f"within 1.15 of the bound, {1.15 * bound:.1f} ms)")
    lines.append("# each round: " + "; ".join(f"{k} " + " ".join(f"{v:.1f}" for v in parts[k])
                                              for k in ("backward_ms", "big_ready_ms", "allreduce_ms", "update_ms",
                                                        "parts_step_ms") if parts[k]))
    return lines
