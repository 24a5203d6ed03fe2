#!/usr/bin/python3
"""torch.distributed all-reduce / broadcast timings in nccl-tests' table format, for the gloo
backend (the peer coll is measured against) or coll's own backend (--backend coll, which
needs build/python on PYTHONPATH).

Launch like any torch job: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment
(torchrun sets them). Prints size, time per op and algbw/busbw (nccl-tests definitions).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * units[s[-1].upper()]) if s[-1].upper() in units else int(s)


def sizes(lo, hi, factor):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def time_op(op, tensor, iters, warmup):
    for _ in range(warmup):
        op(tensor)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        op(tensor)
    elapsed = (time.perf_counter() - start) / iters
    t = torch.tensor([elapsed], dtype=torch.float64)
    dist.all_reduce(t)  # report the mean over ranks, like nccl-tests -a 1
    return t.item() / dist.get_world_size()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--op", choices=["all_reduce", "broadcast"], default="all_reduce")
    p.add_argument("-b", default="8")
    p.add_argument("-e", default="32M")
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-n", type=int, default=5)
    p.add_argument("-w", type=int, default=1)
    p.add_argument("--backend", choices=["gloo", "coll"], default="gloo")
    args = p.parse_args()
    if args.backend == "coll":
        import coll.torch  # noqa: F401  registers the backend
    dist.init_process_group(args.backend)
    n = dist.get_world_size()
    factor = 2 * (n - 1) / n if args.op == "all_reduce" else 1.0
    op = (lambda t: dist.all_reduce(t)) if args.op == "all_reduce" else (lambda t: dist.broadcast(t, 0))
    if dist.get_rank() == 0:
        print(f"# torch {torch.__version__} {args.backend} {args.op}, {n} ranks")
        print("#       size    time(us)   algbw   busbw")
    for size in sizes(parse_size(args.b), parse_size(args.e), args.f):
        tensor = torch.ones(max(1, size // 4), dtype=torch.float32)
        secs = time_op(op, tensor, args.n, args.w)
        if dist.get_rank() == 0:
            algbw = size / secs / 1e9
            print(f"{size:12d} {secs * 1e6:11.2f} {algbw:7.3f} {algbw * factor:7.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
