#!/usr/bin/python3
"""DistributedDataParallel step time under a torch.distributed backend (coll or gloo).

A 29 M-parameter MLP (116 MB of float32 gradients per step, DDP's default 25 MiB buckets), a
fixed synthetic batch per rank, SGD. Prints the median step time over --steps after --warmup.
Launch like any torch job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; torchrun sets them);
--backend coll needs build/python on PYTHONPATH.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist


def model():
    return torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                               torch.nn.ReLU(), torch.nn.Linear(4096, 1000))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=["gloo", "coll"], default="coll")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    if args.backend == "coll":
        import coll.torch  # noqa: F401  registers the backend
    dist.init_process_group(args.backend)
    torch.manual_seed(0)
    net = torch.nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(dist.get_rank())
    x, y = torch.randn(args.batch, 2048, generator=g), torch.randint(0, 1000, (args.batch,), generator=g)
    times, forwards = [], []
    for step in range(args.warmup + args.steps):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        out = net(x)
        forward = time.perf_counter() - start  # part of the step's bound: nothing to send yet
        torch.nn.functional.cross_entropy(out, y).backward()  # returns once DDP's all-reduces are done
        opt.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
            forwards.append(forward)
    t = torch.tensor([statistics.median(times), statistics.median(forwards)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    if dist.get_rank() == 0:
        params = sum(q.numel() for q in net.parameters())
        print(f"ddp {args.backend} ranks {dist.get_world_size()} params {params} step_ms {t[0].item() * 1e3:.1f} "
              f"forward_ms {t[1].item() * 1e3:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
