#!/usr/bin/env python3
"""All-reduce, all-gather and reduce-scatter of CUDA tensors through torch.distributed's
backend "coll", n ranks on this host's GPUs (all on GPU 0 when there is one), beside the GPU's
own device-to-device copy rate measured by the same script: busbw as nccl-tests defines it
(all-reduce 2(n-1)/n, the others (n-1)/n of the algorithm bandwidth).

    PYTHONPATH=<coll package> python3 bench/torch_cuda_busbw.py --ranks 2 4 --sizes 8M 256M
"""
import argparse
import datetime
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def copy_rate(nbytes, iters=10):
    """Bytes copied per second by a device-to-device copy of nbytes (median of iters)."""
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    times = []
    for _ in range(iters + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        b.copy_(a)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times[2:])


def timed(op, iters, warmup):
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        op()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters


def worker(rank, n, port, sizes, iters, queue):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import coll.torch  # noqa: F401  registers backend "coll"
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("coll", timeout=datetime.timedelta(seconds=120))
    for nbytes in sizes:
        count = nbytes // 4 // n * n
        x = torch.ones(count, dtype=torch.float32, device="cuda")
        out = torch.empty(count // n, dtype=torch.float32, device="cuda")
        whole = torch.empty(count, dtype=torch.float32, device="cuda")
        ops = {
            "all_reduce": (lambda: dist.all_reduce(x), 2 * (n - 1) / n),
            "all_gather": (lambda: dist.all_gather_into_tensor(whole, x[: count // n]), (n - 1) / n),
            "reduce_scatter": (lambda: dist.reduce_scatter_tensor(out, x), (n - 1) / n),
        }
        for name, (op, factor) in ops.items():
            seconds = timed(op, iters, 3)
            slowest = torch.tensor([seconds], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            if rank == 0:
                algbw = count * 4 / slowest.item()
                queue.put((n, name, count * 4, slowest.item() * 1e6, algbw / 1e9, algbw * factor / 1e9))
        x.fill_(1.0)
        dist.all_reduce(x)
        assert torch.all(x == n), f"rank {rank}: all_reduce of ones gave {x[:4].tolist()}, want {n}"
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--sizes", nargs="+", default=["8M", "256M"])
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_cuda_busbw: no GPU (torch.cuda.is_available() is False)")
    sizes = [parse_size(s) for s in args.sizes]
    copy = copy_rate(max(sizes))
    print(f"# {torch.cuda.get_device_name(0)}: device-to-device copy of {max(sizes) >> 20} MiB at {copy / 1e9:.1f} GB/s "
          f"(torch {torch.__version__}, backend coll)")
    print(f"# {'ranks':>5} {'op':>15} {'size (B)':>12} {'time (us)':>11} {'algbw':>8} {'busbw':>8} {'busbw/copy':>10}")
    ctx = mp.get_context("spawn")
    for n in args.ranks:
        queue = ctx.Queue()
        mp.start_processes(worker, args=(n, free_port(), sizes, args.iters, queue), nprocs=n, start_method="spawn")
        for _ in range(3 * len(sizes)):
            ranks, name, nbytes, us, algbw, busbw = queue.get(timeout=30)
            print(f"  {ranks:>5} {name:>15} {nbytes:>12} {us:>11.1f} {algbw:>8.1f} {busbw:>8.1f} {busbw * 1e9 / copy:>10.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
