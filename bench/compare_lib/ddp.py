"""compare.py --ddp: torch's DistributedDataParallel step (bench/torch_ddp_step.py, a
29 M-parameter MLP, DDP's 25 MiB buckets) under torch.distributed backend "coll" beside
"gloo": the same model, the same ranks, interleaved rounds, medians. The step's collectives are
what a training job's are; --batch 2 makes the step bound by them.

OMP_NUM_THREADS=1: the ranks share this machine's cores, and torch's own thread pool per rank
would oversubscribe them further, whichever backend."""
import statistics

from .common import ROOT, number_after, torch_env, torch_has_coll, torch_version, write_mode_table
from .step_bound import bound_lines, ring_rate

BACKENDS = ["coll", "gloo"]


def add_args(p):
    g = p.add_argument_group("--ddp: torch DDP step time, backend coll beside gloo")
    g.add_argument("--ddp", action="store_true",
                   help="the DDP step instead of the collectives (--local N or --netcluster H --per-host R)")
    g.add_argument("--batch", type=int, default=32, help="per rank (2: the step bound by communication)")
    g.add_argument("--steps", type=int, default=5, help="timed steps per launch, after 2 untimed")



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
    for rnd in range(args.rounds):
        ring_rates.append(ring_rate(scn))
        for backend in BACKENDS[rnd % 2:] + BACKENDS[:rnd % 2]:
            cmd = [py, str(ROOT / "bench/torch_ddp_step.py"), "--backend", backend,
                   "--steps", str(args.steps), "--warmup", "2", "--batch", str(args.batch)]
            env = {**torch_env(py, scn.build, backend), "OMP_NUM_THREADS": "1"}
            rc, text = scn.launch_ranks(cmd, args.timeout, env)
            step, fwd = number_after(text, "step_ms"), number_after(text, "forward_ms")
            if rc != 0 or step is None:
                errors.append(f"round {rnd + 1} {backend}: exit {rc}\n" + "\n".join(text.splitlines()[-10:]))
            else:
                got[(backend, "step_ms")].append(step)
                got[(backend, "forward_ms")].append(fwd)
                got[(backend, "params")].append(number_after(text, "params"))
            log(f"[{scn.name}] round {rnd + 1} ddp {backend}: " + ("ok" if rc == 0 else f"exit {rc}"))
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
    for (backend, key), v in sorted(got.items()):
        if key != "params":
            lines.append(f"# {key} {backend}, each round: " + " ".join(cell(x) for x in v))
    if getattr(scn, "hosts", 1) > 1:
        lines.append("# bare TCP ring, each round (MB/s a stream): " +
                     " ".join(f"{r / 1e6:.1f}" if r else "-" for r in ring_rates))
    return write_mode_table(out, f"{scn.name}_ddp", lines, errors)
