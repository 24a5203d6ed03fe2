#!/usr/bin/python3
"""DistributedDataParallel step time under a torch.distributed backend (coll or gloo).

A 29 M-parameter MLP (116 MB of float32 gradients per step, DDP's default 25 MiB buckets), a
fixed synthetic batch per rank, SGD. Prints the median step time over --steps after --warmup.
Launch like any torch job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; torchrun sets them);
--backend coll needs build/python on PYTHONPATH.

--parts times each step's buckets through a communication hook that does what DDP's default
does (divide by the world size, all-reduce, in place) and notes when each bucket was handed to
the backend and when its all-reduce ended; rank 0 prints, for the slowest rank (medians),
"issue_ms A,B,C" (from the step's start), "bucket_bytes X,Y,Z" and "tail_ms T" (from the last
all-reduce's end to the step's end: DDP's copy back into the gradients and the optimizer's
step, which wait for it). A step can end no sooner than max over buckets k of issue_k + the
wire time of buckets k.. + tail (compare_lib/ddp.py prints that ceiling).
"""
import argparse
import statistics
import time
from collections import defaultdict

import torch
import torch.distributed as dist


def model():
    return torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                               torch.nn.ReLU(), torch.nn.Linear(4096, 1000))


class BucketClock:
    """--parts: DDP's default all-reduce as a hook, with each bucket's issue and end noted."""

    def __init__(self, world):
        self.world, self.t0 = world, 0.0
        self.step = []  # this step's buckets: [issue, end, bytes], in issue order
        self.kept = defaultdict(list)  # ("issue", k) / ("tail",) -> ms over the kept steps
        self.sizes = []

    def start(self, t0):
        self.t0, self.step = t0, []

    def hook(self, _state, bucket):
        buf = bucket.buffer()
        entry = [time.perf_counter(), None, buf.numel() * buf.element_size()]
        self.step.append(entry)
        buf.div_(self.world)
        fut = dist.all_reduce(buf, async_op=True).get_future()

        def done(f):
            entry[1] = time.perf_counter()
            return f.value()[0]
        return fut.then(done)

    def keep(self, end):
        for k, (issue, done, size) in enumerate(self.step):
            self.kept[("issue", k)].append((issue - self.t0) * 1e3)
            self.kept[("end", k)].append((done - self.t0) * 1e3)
        self.kept[("tail",)].append((end - max(e[1] for e in self.step)) * 1e3)
        self.sizes = [e[2] for e in self.step]

    def report(self):
        """ " issue_ms ... bucket_bytes ... tail_ms ... end_ms ...": the slowest rank's medians (a
        collective); end_ms: when each bucket's all-reduce ended."""
        n = len(self.sizes)
        mine = ([statistics.median(self.kept[("issue", k)]) for k in range(n)] +
                [statistics.median(self.kept[("tail",)])] +
                [statistics.median(self.kept[("end", k)]) for k in range(n)])
        t = torch.tensor(mine, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        v = t.tolist()
        return (" issue_ms " + ",".join(f"{x:.1f}" for x in v[:n]) + " bucket_bytes " +
                ",".join(str(b) for b in self.sizes) + f" tail_ms {v[n]:.1f}" +
                " end_ms " + ",".join(f"{x:.1f}" for x in v[n + 1:]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=["gloo", "coll"], default="coll")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--parts", action="store_true", help="time the buckets (above)")
    args = p.parse_args()
    if args.backend == "coll":
        import coll.torch  # noqa: F401  registers the backend
    dist.init_process_group(args.backend)
    torch.manual_seed(0)
    net = torch.nn.parallel.DistributedDataParallel(model())
    clock = BucketClock(dist.get_world_size()) if args.parts else None
    if clock:
        net.register_comm_hook(None, clock.hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(dist.get_rank())
    x, y = torch.randn(args.batch, 2048, generator=g), torch.randint(0, 1000, (args.batch,), generator=g)
    times, forwards = [], []
    for step in range(args.warmup + args.steps):
        dist.barrier()
        start = time.perf_counter()
        if clock:
            clock.start(start)
        opt.zero_grad()
        out = net(x)
        forward = time.perf_counter() - start  # part of the step's bound: nothing to send yet
        torch.nn.functional.cross_entropy(out, y).backward()  # returns once DDP's all-reduces are done
        opt.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
            forwards.append(forward)
            if clock:
                clock.keep(start + times[-1])
    t = torch.tensor([statistics.median(times), statistics.median(forwards)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    parts = clock.report() if clock else ""
    if dist.get_rank() == 0:
        params = sum(q.numel() for q in net.parameters())
        print(f"ddp {args.backend} ranks {dist.get_world_size()} params {params} step_ms {t[0].item() * 1e3:.1f} "
              f"forward_ms {t[1].item() * 1e3:.1f}{parts}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
