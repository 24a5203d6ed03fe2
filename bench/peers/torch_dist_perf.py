#!/usr/bin/python3
"""torch.distributed all-reduce / broadcast / all-gather / reduce-scatter timings in
nccl-tests' table format, for the gloo backend (the peer coll is measured against) or coll's
own backend (--backend coll, which needs build/python on PYTHONPATH).

Launch like any torch job: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment
(torchrun sets them). Prints size, time per op, algbw/busbw (nccl-tests definitions) and, with
-c 1, the wrong elements of one more op on fresh data (summed over ranks). Sizes are
nccl-tests' (the whole buffer: all-gather's output, reduce-scatter's input). Either -b/-e/-f
with -n/-w for every size, or --plan SIZE:ITERS:WARMUP,... to give each size its own counts.
A collective the backend lacks (gloo has no reduce-scatter) prints "# unsupported" and no rows.
Beyond nccl-tests' columns: the median and 99th percentile of the per-op times (every rank's,
pooled) and the CPU-seconds (user + system, all threads) all ranks spent per GB of buffer.
"""
import argparse
import math
import resource
import time

import torch
import torch.distributed as dist

OPS = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * units[s[-1].upper()]) if s[-1].upper() in units else int(s)


def geometric_plan(args):
    s, hi = parse_size(args.b), parse_size(args.e)
    while s <= hi:
        yield s, args.n, args.w
        s *= args.f


def parsed_plan(text):
    for item in text.split(","):
        size, iters, warmup = (item.split(":") + ["1", "0"])[:3]
        yield parse_size(size), int(iters), int(warmup)


def bus_factor(op, n):
    """nccl-tests' factors: the bytes each rank's link carries per algbw byte."""
    return {"all_reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(op, (n - 1) / n)


class Buffers:
    """One rank's input and output for a collective of nccl-tests size `size`."""

    def __init__(self, op, size, n):
        total = max(1, size // 4)
        self.chunk = max(1, total // n) if op in ("all_gather", "reduce_scatter") else total
        send = self.chunk * n if op == "reduce_scatter" else self.chunk
        recv = self.chunk * n if op == "all_gather" else self.chunk
        self.input = torch.ones(send, dtype=torch.float32)
        self.output = torch.zeros(recv, dtype=torch.float32)
        self.bytes = 4 * max(send, recv)


def make_runner(op, n):
    """The call for `op`; all-gather uses the flat-tensor form where the backend has it."""
    if op == "all_reduce":
        return lambda b: dist.all_reduce(b.input)
    if op == "broadcast":
        return lambda b: dist.broadcast(b.output, 0)
    if op == "reduce_scatter":
        return lambda b: dist.reduce_scatter_tensor(b.output, b.input)
    flat = [True]

    def all_gather(b):
        if flat[0]:
            try:
                return dist.all_gather_into_tensor(b.output, b.input)
            except RuntimeError:  # gloo: no flat form; its users call the list form
                flat[0] = False
        return dist.all_gather(list(b.output.chunk(n)), b.input)

    return all_gather


def cpu_seconds():
    """User + system CPU of this process, every thread (gloo's included)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def quantile(sorted_samples, q):
    """Nearest-rank q-quantile."""
    k = min(max(math.ceil(q * len(sorted_samples)), 1), len(sorted_samples))
    return sorted_samples[k - 1]


def time_op(run, bufs, iters, warmup):
    """Mean time per op over ranks (nccl-tests -a 1), the median and 99th percentile of every
    rank's per-op times pooled, and all ranks' CPU-seconds per op."""
    for _ in range(warmup):
        run(bufs)
    dist.barrier()
    iters = max(1, iters)
    stamps = []  # a list append in the timed loop, not a tensor write
    cpu_start, start = cpu_seconds(), time.perf_counter()
    for _ in range(iters):
        stamps.append(time.perf_counter())
        run(bufs)
    end = time.perf_counter()
    elapsed = (end - start) / iters
    stamps.append(end)
    per_op = torch.tensor([b - a for a, b in zip(stamps, stamps[1:])], dtype=torch.float64)
    sums = torch.tensor([elapsed, cpu_seconds() - cpu_start], dtype=torch.float64)
    dist.all_reduce(sums)
    pooled = [torch.zeros_like(per_op) for _ in range(dist.get_world_size())]
    dist.all_gather(pooled, per_op)
    samples = sorted(torch.cat(pooled).tolist())
    return (sums[0].item() / dist.get_world_size(), quantile(samples, 0.5), quantile(samples, 0.99),
            sums[1].item() / iters)


def pattern(rank, length, offset=0):
    """Small integers, so float sums over any rank count stay exact."""
    idx = torch.arange(offset, offset + length, dtype=torch.int64)
    return ((idx % 13 + 1) * (rank + 1)).to(torch.float32)


def expected(op, bufs, rank, n):
    ranks_sum = n * (n + 1) // 2
    if op == "all_reduce":
        return pattern(0, bufs.input.numel()) * ranks_sum
    if op == "broadcast":
        return pattern(0, bufs.output.numel())
    if op == "all_gather":
        return torch.cat([pattern(r, bufs.chunk) for r in range(n)])
    return pattern(0, bufs.chunk, rank * bufs.chunk) * ranks_sum


def check_op(op, run, bufs, rank, n):
    """One op on fresh data; wrong elements summed over ranks (nccl-tests -c 1)."""
    bufs.input.copy_(pattern(rank, bufs.input.numel()))
    bufs.output.copy_(pattern(0, bufs.output.numel()) if op == "broadcast" and rank == 0 else
                      torch.full_like(bufs.output, -1.0))
    run(bufs)
    result = bufs.input if op == "all_reduce" else bufs.output
    wrong = torch.tensor([int((result != expected(op, bufs, rank, n)).sum())], dtype=torch.int64)
    dist.all_reduce(wrong)
    return int(wrong.item())


def supported(op, run, n):
    """False where the backend refuses the collective (raised before any traffic)."""
    try:
        run(Buffers(op, 4 * n, n))
        return True
    except RuntimeError as e:
        if dist.get_rank() == 0:
            print(f"# unsupported: {op}: {e}", flush=True)
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--op", choices=OPS, default="all_reduce")
    p.add_argument("-b", default="8")
    p.add_argument("-e", default="32M")
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-n", type=int, default=5)
    p.add_argument("-w", type=int, default=1)
    p.add_argument("-c", type=int, default=0, help="1: check results (the #wrong column)")
    p.add_argument("--plan", help="SIZE:ITERS:WARMUP,... instead of -b/-e/-f/-n/-w")
    p.add_argument("--backend", choices=["gloo", "coll"], default="gloo")
    args = p.parse_args()
    if args.backend == "coll":
        import coll.torch  # noqa: F401  registers the backend
    dist.init_process_group(args.backend)
    n, rank = dist.get_world_size(), dist.get_rank()
    run = make_runner(args.op, n)
    if rank == 0:
        print(f"# torch {torch.__version__} {args.backend} {args.op}, {n} ranks")
        print("#       size    time(us)   algbw   busbw  #wrong     p50(us)     p99(us)  cpu(s)/GB")
    failures = 0
    if supported(args.op, run, n):
        for size, iters, warmup in parsed_plan(args.plan) if args.plan else geometric_plan(args):
            bufs = Buffers(args.op, size, n)
            secs, p50, p99, cpu = time_op(run, bufs, iters, warmup)
            wrong = check_op(args.op, run, bufs, rank, n) if args.c else -1
            failures += wrong > 0
            if rank == 0:
                algbw = bufs.bytes / secs / 1e9
                print(f"{bufs.bytes:12d} {secs * 1e6:11.2f} {algbw:7.3f} "
                      f"{algbw * bus_factor(args.op, n):7.3f} {wrong if wrong >= 0 else 'N/A':>7} "
                      f"{p50 * 1e6:11.2f} {p99 * 1e6:11.2f} {cpu / (bufs.bytes / 1e9):10.4g}", flush=True)
    dist.destroy_process_group()
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
