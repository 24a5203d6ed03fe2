"""DDP (with and without no_sync), ZeroRedundancyOptimizer and FSDP2 (fully_shard) on CPU over
backend "coll" against one process training on the same global batches: torch 2.x's training
wrappers on coll, each checked to the same parameters.

    torchrun --nproc-per-node 2 tests/torch2/training_check.py      (coll pip-installed)
"""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import coll.torch  # noqa: F401  (registers "coll" on any torch)

STEPS, BATCH, TOL = 4, 8, 1e-5


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def batches(rank, n):
    """Each step's global batch; rank r takes rows r, r+n, ..."""
    g = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        x, y = torch.randn(BATCH * n, 16, generator=g), torch.randn(BATCH * n, 4, generator=g)
        yield x, y, x[rank::n], y[rank::n]


def reference(n):
    """One process, the global batch, mean loss: what every wrapper must reproduce."""
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for x, y, _, _ in batches(0, n):
        opt.zero_grad()
        nn.functional.mse_loss(m(x), y).backward()
        opt.step()
    return m


def close(a, b):
    return all(torch.allclose(p.detach(), q.detach(), atol=TOL) for p, q in zip(a.parameters(), b.parameters()))


def ddp(rank, n, no_sync):
    m = nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for x, y, xs, ys in batches(rank, n):
        opt.zero_grad()
        if no_sync:  # two half micro-batches, gradients all-reduced on the second only
            h = len(xs) // 2
            with m.no_sync():
                (nn.functional.mse_loss(m(xs[:h]), ys[:h]) / 2).backward()
            (nn.functional.mse_loss(m(xs[h:]), ys[h:]) / 2).backward()
        else:
            nn.functional.mse_loss(m(xs), ys).backward()
        opt.step()
    return m.module


def zero(rank, n):
    from torch.distributed.optim import ZeroRedundancyOptimizer
    m = nn.parallel.DistributedDataParallel(model())
    opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)
    for x, y, xs, ys in batches(rank, n):
        opt.zero_grad()
        nn.functional.mse_loss(m(xs), ys).backward()
        opt.step()
    return m.module


def fsdp(rank, n):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:  # torch before 2.6 keeps FSDP2 under _composable
        from torch.distributed._composable.fsdp import fully_shard
    m = model()
    for layer in m:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for x, y, xs, ys in batches(rank, n):
        opt.zero_grad()
        nn.functional.mse_loss(m(xs), ys).backward()
        opt.step()
    full = model()
    with torch.no_grad():
        for p, q in zip(full.parameters(), m.parameters()):
            p.copy_(q.full_tensor())
    return full


def main():
    dist.init_process_group("coll")
    rank, n = dist.get_rank(), dist.get_world_size()
    want = reference(n)
    failed = []
    # Older torch (2.4 here) puts FSDP2's device mesh on CUDA: without a GPU that is torch's
    # limit, not the backend's, and is reported as a skip.
    older = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 6)
    for name, run in [("ddp", lambda: ddp(rank, n, False)), ("ddp no_sync", lambda: ddp(rank, n, True)),
                      ("zero", lambda: zero(rank, n)), ("fsdp fully_shard", lambda: fsdp(rank, n))]:
        try:
            ok = close(run(), want)
        except Exception as e:  # named, and the others still run
            if name.startswith("fsdp") and older and "CUDA" in str(e) and not torch.cuda.is_available():
                print(f"rank {rank}: {name}: skipped: torch {torch.__version__}'s FSDP2 needs CUDA ({e})", flush=True)
                dist.barrier()
                continue
            ok = False
            print(f"rank {rank}: {name}: {type(e).__name__}: {e}", flush=True)
        print(f"rank {rank}: {name}: {'ok' if ok else 'FAILED'}", flush=True)
        if not ok:
            failed.append(name)
        dist.barrier()
    dist.destroy_process_group()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
