"""A torchft job that loses a replica and gets a replacement, on coll or on gloo.

Three replicas (one process each) train an MLP with torchft's Manager and OptimizerWrapper
(gradients averaged with the Manager's all-reduce) over a lighthouse this driver runs. Once
every replica has committed --kill-at steps the driver kills (SIGKILL) replica 2; the
survivors' step in flight, if any, fails (PeerLost on coll) and torchft discards it; the next
quorum goes on with two. A replacement process starts --replace-after seconds later, joins at a
quorum, takes the parameters and optimizer state from a survivor (torchft's checkpoint
transport) and trains on. Checked: all three stop at one step (--steps after the replacement is
in), bit-identical (parameters and optimizer state), and each survivor's committed steps never
go back or skip. Measured: the survivors' longest pause after the kill and while the
replacement joins, the replacement's start (and its manager's) to its first committed step, and
the median step before the kill and with the replacement in.

    python tests/torch2/torchft_check.py --backend coll      # or gloo (torchft's ProcessGroupGloo)
    python tests/torch2/torchft_check.py --compare           # both, one table

Exit 0 when every check holds; 77 when torchft or coll.torch cannot be imported (skipped).
"""
import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["coll", "gloo"], default="coll")
    p.add_argument("--compare", action="store_true", help="run coll and gloo, print one table")
    p.add_argument("--steps", type=int, default=30, help="steps all replicas train together at the end")
    p.add_argument("--kill-at", type=int, default=30)
    p.add_argument("--replace-after", type=float, default=2.0, help="seconds after the kill")
    p.add_argument("--timeout", type=float, default=10.0, help="the process group's op timeout (s)")
    p.add_argument("--limit", type=float, default=240.0, help="the whole job (s)")
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--replica-id", default=None, help=argparse.SUPPRESS)
    p.add_argument("--lighthouse", default=None, help=argparse.SUPPRESS)
    p.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    return p.parse_args()


# ---------------------------------------------------------------- one replica (a process)

def make_group(backend, timeout):
    if backend == "coll":
        from coll.torch_ft import ProcessGroupColl
        return ProcessGroupColl(timeout=timeout)
    from torchft.process_group import ProcessGroupGloo
    return ProcessGroupGloo(timeout=timeout)


def digest(model, optimizer):
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    for key, state in sorted(optimizer.state_dict()["state"].items()):
        for name, t in sorted(state.items()):
            h.update(f"{key}.{name}".encode())
            h.update(t.detach().contiguous().numpy().tobytes() if hasattr(t, "numpy") else repr(t).encode())
    return h.hexdigest()


def average_gradients(manager, model):
    """One all-reduce of every gradient (one bucket), averaged over the quorum's replicas. A
    failure is torchft's to handle: the work completes, the step is not committed.
    (torchft 0.2.0's DistributedDataParallel asserts in its comm hook when an all-reduce fails,
    on gloo as on coll, so the job averages by hand.)"""
    import torch
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    manager.allreduce(flat).wait()
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def last_step(work):
    """The step every replica stops at: the driver sets it once the replacement is in (a
    committed step number is the same on every replica of a quorum)."""
    try:
        with open(os.path.join(work, "last_step")) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1 << 30


def worker(args):
    import torch
    from torch import nn
    from torch.distributed import TCPStore
    from torchft.manager import Manager
    from torchft.optim import OptimizerWrapper

    torch.set_num_threads(1)
    timeout = timedelta(seconds=args.timeout)
    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def load_state_dict(state):
        model.load_state_dict(state["model"])
        sgd.load_state_dict(state["optim"])

    def state_dict():
        return {"model": model.state_dict(), "optim": sgd.state_dict()}

    manager = Manager(pg=make_group(args.backend, timeout), min_replica_size=2, load_state_dict=load_state_dict,
                      state_dict=state_dict, replica_id=args.replica_id, store_addr="127.0.0.1",
                      store_port=store.port, rank=0, world_size=1, lighthouse_addr=args.lighthouse,
                      hostname="127.0.0.1", timeout=timeout, quorum_timeout=timedelta(seconds=60))
    optimizer = OptimizerWrapper(manager, sgd)
    loss_fn = nn.CrossEntropyLoss()
    log = open(os.path.join(args.dir, f"progress.{args.worker}"), "a", buffering=1)
    log.write(json.dumps({"t": time.monotonic(), "ready": True}) + "\n")
    while manager.current_step() < last_step(args.dir):
        gen = torch.Generator().manual_seed(1000 * manager.current_step() + args.worker)
        x = torch.randn(32, 64, generator=gen)
        y = torch.randint(0, 10, (32,), generator=gen)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        average_gradients(manager, model)
        before = manager.current_step()
        optimizer.step()
        log.write(json.dumps({"t": time.monotonic(), "step": manager.current_step(), "committed":
                              manager.current_step() > before, "participants": manager.num_participants(),
                              "loss": float(loss.detach())}) + "\n")
    with open(os.path.join(args.dir, f"final.{args.worker}"), "w") as f:
        json.dump({"step": manager.current_step(), "digest": digest(model, sgd)}, f)
    manager.shutdown(wait=False)
    os._exit(0)  # torchft's threads and the store need not be waited for


# ---------------------------------------------------------------- the driver

def progress(work, worker, ready=False):
    try:
        with open(os.path.join(work, f"progress.{worker}")) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []
    return [r for r in records if ("ready" in r) == ready]


def set_last_step(work, step):
    with open(os.path.join(work, "last_step.tmp"), "w") as f:
        f.write(str(step))
    os.replace(os.path.join(work, "last_step.tmp"), os.path.join(work, "last_step"))


def start_worker(args, work, worker, replica_id, lighthouse):
    cmd = [sys.executable, os.path.abspath(__file__), "--backend", args.backend, "--steps", str(args.steps),
           "--timeout", str(args.timeout), "--worker", str(worker), "--replica-id", replica_id,
           "--lighthouse", lighthouse, "--dir", work]
    out = open(os.path.join(work, f"log.{worker}"), "w")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)


def wait_for(cond, limit, what, procs):
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"{what} did not happen within {limit:.0f} s")
        dead = [w for w, p in procs.items() if p.poll() is not None]
        if dead:
            raise TimeoutError(f"replica {dead[0]} exited ({procs[dead[0]].returncode}) before {what}")
        time.sleep(0.02)


def run_job(args):
    from torchft._torchft import LighthouseServer
    lighthouse = LighthouseServer(bind="127.0.0.1:0", min_replicas=2, join_timeout_ms=1000, heartbeat_timeout_ms=1000)
    work = tempfile.mkdtemp(prefix=f"coll-torchft-{args.backend}.")
    start = time.monotonic()
    procs = {w: start_worker(args, work, w, f"replica{w}", lighthouse.address()) for w in range(3)}
    try:
        limit = args.limit
        # Every replica in the quorum and trained a while (the first quorum may form without a
        # replica that started later; it heals in then).
        wait_for(lambda: all(sum(r["committed"] for r in progress(work, w)) >= args.kill_at for w in range(3)), limit,
                 f"every replica committed {args.kill_at} steps", procs)
        killed_at = time.monotonic()
        procs[2].send_signal(signal.SIGKILL)
        procs[2].wait()
        time.sleep(args.replace_after)
        replaced_at = time.monotonic()
        procs[3] = start_worker(args, work, 3, "replica2-replacement", lighthouse.address())
        wait_for(lambda: sum(r["committed"] for r in progress(work, 3)) >= 3, limit, "the replacement committed a step",
                 {w: p for w, p in procs.items() if w != 2})
        set_last_step(work, max(r["step"] for r in progress(work, 0)) + args.steps)
        for w in (0, 1, 3):
            left = limit - (time.monotonic() - start)
            procs[w].wait(timeout=max(left, 1))
    except (TimeoutError, subprocess.TimeoutExpired) as e:
        for w, p in procs.items():
            if p.poll() is None:
                p.kill()
        for w in procs:
            with open(os.path.join(work, f"log.{w}")) as f:
                print(f"--- replica {w} ---\n" + f.read()[-3000:])
        raise SystemExit(f"torchft check ({args.backend}): {e}")
    finally:
        lighthouse.shutdown()
    return judge(args, work, killed_at, replaced_at, procs)


def judge(args, work, killed_at, replaced_at, procs):
    problems = []
    finals = {}
    for w in (0, 1, 3):
        if procs[w].returncode != 0:
            problems.append(f"replica {w} exited {procs[w].returncode}")
        try:
            with open(os.path.join(work, f"final.{w}")) as f:
                finals[w] = json.load(f)
        except OSError:
            problems.append(f"replica {w} wrote no final state")
    if len({f["digest"] for f in finals.values()}) > 1:
        problems.append("the replicas' final parameters and optimizer state differ: " +
                        ", ".join(f"{w}: {f['digest'][:12]}" for w, f in finals.items()))
    if len({f["step"] for f in finals.values()}) > 1:
        problems.append("the replicas ended at different steps: " + str({w: f["step"] for w, f in finals.items()}))
    for w in (0, 1):
        steps = [r["step"] for r in progress(work, w)]
        if any(b < a or b > a + 1 for a, b in zip(steps, steps[1:])):
            problems.append(f"replica {w}'s committed steps went back or skipped")
    joined = [r["t"] for r in progress(work, 3) if r["committed"]]
    ready = [r["t"] for r in progress(work, 3, ready=True)]
    survivor = [r["t"] for r in progress(work, 0) if r["committed"]]
    return {
        "backend": args.backend,
        "median step before the kill (ms)": median_gap([t for t in survivor if t < killed_at]),
        "survivors' longest pause after the kill (s)": longest_gap(survivor, killed_at, replaced_at),
        "replacement: process start to first committed step (s)": round(joined[0] - replaced_at, 2) if joined else None,
        "replacement: manager ready to first committed step (join and state transfer) (s)":
            round(joined[0] - ready[0], 2) if joined and ready else None,
        "survivors' longest pause while it joined (s)": longest_gap(survivor, replaced_at, joined[0] if joined else 0),
        "median step with the replacement in (ms)": median_gap([t for t in survivor if joined and t > joined[0]]),
        "steps not committed on the survivors (failed, redone)":
            sum(1 for w in (0, 1) for r in progress(work, w) if not r["committed"]),
        "final step, every replica": sorted({f["step"] for f in finals.values()}),
        "replicas bit-identical at the end": len(finals) == 3 and len({f["digest"] for f in finals.values()}) == 1,
        "problems": problems,
    }


def longest_gap(times, start, end):
    window = [t for t in times if start - 1 <= t <= end + 1]
    gaps = [b - a for a, b in zip(window, window[1:]) if b > start]
    return round(max(gaps), 3) if gaps else None


def median_gap(times):
    gaps = [(b - a) * 1000 for a, b in zip(times, times[1:])]
    return round(statistics.median(gaps), 1) if gaps else None


def main():
    args = parse_args()
    if args.worker is not None:
        return worker(args)
    try:
        import torchft  # noqa: F401
        if args.backend == "coll" or args.compare:
            import coll.torch_ft  # noqa: F401
    except ImportError as e:
        print(f"torchft check: skipped: {e}")
        return 77
    results = []
    for backend in (["coll", "gloo"] if args.compare else [args.backend]):
        args.backend = backend
        results.append(run_job(args))
    keys = [k for k in results[0] if k not in ("backend", "problems")]
    print("\n| torchft, 3 replicas, replica 2 killed at step %d, a replacement %.0f s later |%s" %
          (args.kill_at, args.replace_after, "|".join(f" {r['backend']} " for r in results) + "|"))
    print("|---|" + "---|" * len(results))
    for k in keys:
        print(f"| {k} |" + "|".join(f" {r[k]} " for r in results) + "|")
    bad = [f"{r['backend']}: {p}" for r in results for p in r["problems"]]
    for b in bad:
        print("torchft check: " + b)
    print("torchft check: " + ("ok" if not bad else "FAILED"))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
