"""A 3-rank torch.distributed job on the pip-installed backend "coll" (tests/install/pip_test.sh):
the collectives torch 2.x users reach first, each checked against a value computed here."""
import importlib
import os

import torch
import torch.distributed as dist

import coll


def main():
    # torch 2.x finds "coll" by its entry point (pyproject.toml): no `import coll.torch` first.
    if not hasattr(dist.Backend, "_ensure_backend_registered"):
        importlib.import_module("coll.torch")  # an older torch: registers "coll" (a local import would shadow coll)
    dist.init_process_group("coll")
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "coll", dist.get_backend()

    x = torch.arange(7, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(x)
    assert torch.equal(x, torch.arange(7, dtype=torch.float32) * sum(range(1, n + 1))), x

    out = torch.empty(n * 3, dtype=torch.int64)
    dist.all_gather_into_tensor(out, torch.full((3,), rank, dtype=torch.int64))
    assert torch.equal(out, torch.arange(n).repeat_interleave(3)), out

    rs = torch.empty(2, dtype=torch.float64)
    dist.reduce_scatter_tensor(rs, torch.ones(2 * n, dtype=torch.float64) * (rank + 1))
    assert torch.equal(rs, torch.full((2,), float(sum(range(1, n + 1))), dtype=torch.float64)), rs

    b = torch.tensor([rank * 10.0])
    dist.broadcast(b, src=n - 1)
    assert b.item() == (n - 1) * 10.0, b

    work = dist.all_reduce(torch.ones(4), async_op=True)
    fut = work.get_future()
    assert torch.equal(fut.wait()[0], torch.full((4,), float(n))), fut.value()

    right, left = (rank + 1) % n, (rank - 1) % n
    got = torch.empty(5)
    ops = [dist.P2POp(dist.isend, torch.full((5,), float(rank)), right), dist.P2POp(dist.irecv, got, left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(got, torch.full((5,), float(left))), got

    objs = [None] * n
    dist.all_gather_object(objs, {"rank": rank})
    assert [o["rank"] for o in objs] == list(range(n)), objs

    dist.barrier()
    print(f"rank {rank} of {n}: torch {torch.__version__}, coll from {os.path.dirname(coll.__file__)}: ok", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
