"""One rank of the torch.distributed tests (test_torch.py starts them).

    torch_ranks.py collectives          every collective x dtype x size against a local reference
    torch_ranks.py ddp BACKEND OUTDIR   a few DistributedDataParallel steps; saves the parameters

Rank, world size and the rendezvous come from the environment (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), as torchrun sets them.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

import coll.torch  # noqa: F401  registers backend "coll"

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64, torch.bool]
SIZES = [0, 1, 13, 4099]


def data(rank, numel, dtype, salt=0):
    """Small integers (exact in every dtype, sums included), different on every rank."""
    g = torch.Generator().manual_seed(1000 * rank + 7 * numel + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, (numel,), generator=g).bool()
    return torch.randint(1, 4, (numel,), generator=g).to(dtype)


def reduce_ref(tensors, op):
    """The reduction computed exactly in float64 (int64 for bool), then cast to the dtype. AVG: the
    exact sum divided by the world size, rounded once to the dtype (what the library's sum-then-
    divide gives when the sum is exact, as it is for data()'s small integers), integers truncated
    toward zero (src/reduce/reduce.h)."""
    s = torch.stack([t.double() if t.dtype != torch.bool else t.long() for t in tensors])
    if op == dist.ReduceOp.AVG:
        mean = s.sum(0) / len(tensors)
        floating = tensors[0].dtype.is_floating_point
        return (mean if floating else torch.trunc(mean)).to(tensors[0].dtype)
    out = {dist.ReduceOp.SUM: s.sum(0), dist.ReduceOp.PRODUCT: s.prod(0),
           dist.ReduceOp.MIN: s.min(0).values, dist.ReduceOp.MAX: s.max(0).values}[op]
    return out.bool() if tensors[0].dtype == torch.bool else out.to(tensors[0].dtype)


def check(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{tuple(got.shape)} vs {want.dtype}{tuple(want.shape)}"
    assert torch.equal(got, want), f"{what}: got {got[:8].tolist()} want {want[:8].tolist()}"


def ops_for(dtype):
    """Every ReduceOp docs/PYTHON.md claims, on every dtype it claims. data() keeps products exact at the
    world sizes run here (at most 3**3 = 27: within int8, and exact in float16 and bfloat16).
    AVG is not defined for bool (what would the mean of True and False be?): not claimed there."""
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    return ops if dtype == torch.bool else ops + [dist.ReduceOp.AVG]


def test_reductions(r, n):
    assert 3 ** n <= 127, f"data()'s products overflow int8 on {n} ranks: the references would be wrong"
    for dtype in DTYPES:
        for numel in SIZES:
            everyone = [data(p, numel, dtype) for p in range(n)]
            for op in ops_for(dtype):
                x = everyone[r].clone()
                dist.all_reduce(x, op=op)
                check(x, reduce_ref(everyone, op), f"all_reduce {dtype} {numel} {op}")
                root = numel % n
                y = everyone[r].clone()
                dist.reduce(y, dst=root, op=op)
                if r == root:
                    check(y, reduce_ref(everyone, op), f"reduce {dtype} {numel} {op}")
            chunks = [data(p, numel * n, dtype, salt=1) for p in range(n)]
            out = torch.empty(numel, dtype=dtype)
            dist.reduce_scatter(out, list(chunks[r].chunk(n)) if numel else [torch.empty(0, dtype=dtype)] * n)
            check(out, reduce_ref(chunks, dist.ReduceOp.SUM)[r * numel:(r + 1) * numel], f"reduce_scatter {dtype} {numel}")


def test_data_movement(r, n):
    for dtype in DTYPES:
        for numel in SIZES:
            everyone = [data(p, numel, dtype) for p in range(n)]
            for root in range(n):
                x = everyone[r].clone()
                dist.broadcast(x, src=root)
                check(x, everyone[root], f"broadcast {dtype} {numel} root {root}")
            outs = [torch.empty(numel, dtype=dtype) for _ in range(n)]
            dist.all_gather(outs, everyone[r])
            for p in range(n):
                check(outs[p], everyone[p], f"all_gather {dtype} {numel} from {p}")
            flat = torch.empty(numel * n, dtype=dtype)
            getattr(dist, "all_gather_into_tensor", dist._all_gather_base)(flat, everyone[r])
            check(flat, torch.cat(everyone), f"all_gather_into_tensor {dtype} {numel}")
            whole = torch.cat([data(p, numel * n, dtype, salt=2) for p in range(n)]).view(n, numel * n)
            part = torch.empty(numel, dtype=dtype)
            getattr(dist, "reduce_scatter_tensor", dist._reduce_scatter_base)(part, whole[r].clone())
            if dtype != torch.bool:
                check(part, reduce_ref(list(whole), dist.ReduceOp.SUM)[r * numel:(r + 1) * numel],
                      f"reduce_scatter_tensor {dtype} {numel}")
            root = n - 1
            gathered = [torch.empty(numel, dtype=dtype) for _ in range(n)] if r == root else None
            dist.gather(everyone[r], gathered, dst=root)
            if r == root:
                for p in range(n):
                    check(gathered[p], everyone[p], f"gather {dtype} {numel} from {p}")
            got = torch.empty(numel, dtype=dtype)
            parts = [data(root, numel, dtype, salt=10 + p) for p in range(n)]
            dist.scatter(got, parts if r == root else None, src=root)
            check(got, parts[r], f"scatter {dtype} {numel}")


def test_alltoall(r, n):
    numel = 5
    send = torch.arange(n * numel, dtype=torch.float32) + 100 * r
    out = torch.empty_like(send)
    dist.all_to_all_single(out, send)
    want = torch.cat([torch.arange(r * numel, (r + 1) * numel, dtype=torch.float32) + 100 * p for p in range(n)])
    check(out, want, "all_to_all_single")
    # Uneven: rank r sends p + 1 rows of 3 to rank p.
    in_splits = [p + 1 for p in range(n)]
    out_splits = [r + 1] * n
    send = torch.cat([torch.full((p + 1, 3), float(10 * r + p)) for p in range(n)])
    out = torch.empty(sum(out_splits), 3)
    dist.all_to_all_single(out, send, out_splits, in_splits)
    want = torch.cat([torch.full((r + 1, 3), float(10 * p + r)) for p in range(n)])
    check(out, want, "all_to_all_single uneven")
    sends = [torch.full((p + 2,), float(r)) for p in range(n)]
    recvs = [torch.empty(r + 2) for _ in range(n)]
    dist.all_to_all(recvs, sends)
    for p in range(n):
        check(recvs[p], torch.full((r + 2,), float(p)), f"all_to_all from {p}")


def test_point_to_point_and_async(r, n):
    right, left = (r + 1) % n, (r - 1) % n
    got = torch.empty(7)
    reqs = [dist.isend(torch.full((7,), float(r)), right), dist.irecv(got, left)]
    for q in reqs:
        q.wait()
    check(got, torch.full((7,), float(left)), "isend/irecv ring")
    x = torch.ones(1000)
    work = dist.all_reduce(x, async_op=True)
    doubled = work.get_future().then(lambda fut: fut.value()[0] * 2).wait()
    check(doubled, torch.full((1000,), 2.0 * n), "future chained on all_reduce")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # not contiguous
    dist.all_reduce(t)
    check(t, torch.arange(12, dtype=torch.float32).reshape(3, 4).t() * n, "all_reduce of a transposed view")
    dist.barrier()


def test_p2p_progress(r, n):
    """Sends and receives progress on their own (no group, any order), matched by tag."""
    peer = r ^ 1
    if peer < n:
        for numel in (2, 1 << 18, 1 << 24):  # 8 B, 1 MiB, 64 MiB: eager and rendezvous
            got = torch.empty(numel)
            reqs = [dist.irecv(got, peer), dist.isend(torch.full((numel,), float(r)), peer)]
            reqs[1].wait()  # the send finishes though this rank's receive was posted first
            reqs[0].wait()
            check(got, torch.full((numel,), float(peer)), f"irecv before isend, {numel * 4} bytes")
        # Tags: two messages received in the opposite order of their sending.
        a, b = torch.empty(5), torch.empty(5)
        rb, ra = dist.irecv(b, peer, tag=2), dist.irecv(a, peer, tag=1)
        s1, s2 = dist.isend(torch.full((5,), 1.0 + r), peer, tag=1), dist.isend(torch.full((5,), 2.0 + r), peer, tag=2)
        for q in (rb, ra, s1, s2):
            q.wait()
        check(a, torch.full((5,), 1.0 + peer), "tag 1")
        check(b, torch.full((5,), 2.0 + peer), "tag 2")
    # batch_isend_irecv without a group around it: a ring in both directions.
    right, left = (r + 1) % n, (r - 1) % n
    from_left, from_right = torch.empty(1000), torch.empty(1000)
    ops = [dist.P2POp(dist.irecv, from_left, left), dist.P2POp(dist.irecv, from_right, right),
           dist.P2POp(dist.isend, torch.full((1000,), float(r)), right),
           dist.P2POp(dist.isend, torch.full((1000,), float(r)), left)]
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    check(from_left, torch.full((1000,), float(left)), "batch ring from the left")
    check(from_right, torch.full((1000,), float(right)), "batch ring from the right")
    # Receive from any source: rank 0 hears from everyone, dist.recv names who.
    if r == 0:
        seen = set()
        for _ in range(n - 1):
            t = torch.empty(3)
            src = dist.recv(t)
            check(t, torch.full((3,), float(src)), f"recv from any source (rank {src})")
            seen.add(src)
        assert seen == set(range(1, n)), seen
    else:
        dist.send(torch.full((3,), float(r)), 0)
    dist.barrier()


def test_groups_and_errors(r, n):
    members = list(range(n - 1)) if n > 2 else [0, 1]
    group = dist.new_group(members, backend="coll")
    if r in members:
        x = torch.full((3,), float(r))
        dist.all_reduce(x, group=group)
        check(x, torch.full((3,), float(sum(members))), "all_reduce in a new group")
    for bad, what in [(lambda: dist.broadcast(torch.ones(2), src=n), "root out of range"),
                      (lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "int16"),
                      (lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND), "bitwise op")]:
        try:
            bad()
        except (RuntimeError, ValueError) as e:
            print(f"rank {r}: {what} refused: {str(e).splitlines()[0]}", flush=True)
        else:
            raise AssertionError(f"{what} was accepted")
    x = torch.full((4,), 1.0)
    dist.all_reduce(x)  # the group still works after refusals
    check(x, torch.full((4,), float(n)), "all_reduce after refused calls")


def test_sparse(r, n):
    """Sparse all-reduce: different non-zeros per rank (rank 1 has none), overlapping indices,
    a dense dimension, async; against the dense sum."""
    dense = [torch.zeros(5, 3) for _ in range(n)]
    for k in range(n):
        if k != 1:
            dense[k][k % 5] = float(k + 1)
            dense[k][(k + 2) % 5, 1] = -0.5 * (k + 1)
    x = dense[r].to_sparse(sparse_dim=1)
    dist.all_reduce(x, async_op=True).wait()
    assert x.is_sparse
    check(x.to_dense(), sum(dense), "sparse all_reduce")
    try:
        dist.all_reduce(dense[r].to_sparse(), op=dist.ReduceOp.MAX)
    except RuntimeError as e:
        assert "SUM only" in str(e), e
    else:
        raise AssertionError("sparse all_reduce with MAX was accepted")


def collectives():
    r, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "coll", dist.get_backend()
    test_reductions(r, n)
    test_data_movement(r, n)
    test_alltoall(r, n)
    test_point_to_point_and_async(r, n)
    test_p2p_progress(r, n)
    test_groups_and_errors(r, n)
    test_sparse(r, n)
    print(f"rank {r}: collectives ok", flush=True)


def ddp(backend, outdir):
    r, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    # Small buckets: several all-reduces per step, overlapping the backward pass.
    net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.01)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(100 + r)
    for _ in range(5):
        x, y = torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    torch.save({k: v.detach() for k, v in model.state_dict().items()}, os.path.join(outdir, f"{backend}_{r}.pt"))
    print(f"rank {r}: ddp {backend} ok", flush=True)


def main():
    mode = sys.argv[1]
    backend = sys.argv[2] if mode == "ddp" else "coll"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
    if mode == "collectives":
        collectives()
    else:
        ddp(backend, sys.argv[3])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
