#!/usr/bin/python3
"""A torch.distributed job with backend "coll", as a user runs it under torchrun across hosts.

Each rank all-reduces a tensor whose values it can check by hand, all-gathers its hostname, and
takes two DistributedDataParallel steps on a small model; the parameters must then be equal on
every rank (compared by all-gathering a checksum). Prints one line per rank:
  torch-coll rank R of N on HOST: all_reduce OK, all_gather OK, ddp OK
and exits non-zero with the reason otherwise. Used by tests/launcher/launcher_matrix.sh
(launcher torchrun-py); needs PYTHONPATH to reach coll's Python package.
"""
import socket
import sys

import torch
import torch.distributed as dist

import coll.torch  # noqa: F401  registers the backend


def main():
    dist.init_process_group("coll")
    rank, n = dist.get_rank(), dist.get_world_size()
    host = socket.gethostname()
    done = []

    x = torch.arange(1001, dtype=torch.float32) + rank
    dist.all_reduce(x)
    want = n * torch.arange(1001, dtype=torch.float32) + n * (n - 1) / 2
    if not torch.equal(x, want):
        sys.exit(f"rank {rank}: all_reduce gave {x[:4].tolist()}..., expected {want[:4].tolist()}...")
    done.append("all_reduce OK")

    hosts = [None] * n
    dist.all_gather_object(hosts, host)
    if hosts[rank] != host:
        sys.exit(f"rank {rank}: all_gather_object put {hosts[rank]} where {host} belongs")
    done.append("all_gather OK")

    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    for _ in range(2):
        opt.zero_grad()
        loss = model(torch.randn(8, 16, generator=g)).square().mean()
        loss.backward()
        opt.step()
    digest = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
    digests = [torch.zeros(1, dtype=torch.float64) for _ in range(n)]
    dist.all_gather(digests, digest)
    if any(not torch.equal(d, digests[0]) for d in digests):
        sys.exit(f"rank {rank}: DDP parameters differ across ranks: {[d.item() for d in digests]}")
    done.append("ddp OK")

    print(f"torch-coll rank {rank} of {n} on {host}: {', '.join(done)} (hosts {' '.join(hosts)})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
