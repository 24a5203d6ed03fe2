"""One rank of the CUDA-tensor tests of backend "coll" (test_torch_cuda.py starts them).

    torch_cuda_ranks.py             every collective on CUDA tensors against a CPU reference,
                                    streams, point-to-point, refusals and a DDP step

Rank r uses GPU r % torch.cuda.device_count() (two ranks may share one GPU). Rank, world size
and the rendezvous come from the environment, as torchrun sets them. Prints "CUDA OK rank R".
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

import coll.torch  # noqa: F401  registers backend "coll"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ranks import check, data, ops_for, reduce_ref  # noqa: E402  the CPU tests' references

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64, torch.bool]
SIZES = [1, 13, 4099, 1 << 20]


def dev():
    if os.environ.get("COLL_TEST_DEVICE") == "cpu":  # a dry run of these tests' logic on host tensors
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ["RANK"]) % torch.cuda.device_count())


# torch 1.x names the flat forms with a leading underscore.
all_gather_into_tensor = getattr(dist, "all_gather_into_tensor", getattr(dist, "_all_gather_base", None))
reduce_scatter_tensor = getattr(dist, "reduce_scatter_tensor", getattr(dist, "_reduce_scatter_base", None))


def test_all_reduce(r, n):
    for dtype in DTYPES:
        for numel in SIZES:
            if numel == 1 << 20 and dtype not in (torch.float32, torch.bfloat16):
                continue  # the large size exercises the chunked paths once per width
            inputs = [data(q, numel, dtype) for q in range(n)]
            for op in ops_for(dtype):
                t = inputs[r].to(dev(), copy=True)
                dist.all_reduce(t, op=op)
                check(t.cpu(), reduce_ref(inputs, op), f"all_reduce {dtype} {numel} {op}")


def test_rooted_and_lists(r, n):
    numel, dtype = 4099, torch.float32
    inputs = [data(q, numel, dtype) for q in range(n)]
    t = inputs[r].to(dev(), copy=True)
    dist.broadcast(t, src=n - 1)
    check(t.cpu(), inputs[n - 1], "broadcast")
    t = inputs[r].to(dev(), copy=True)
    dist.reduce(t, dst=1 % n, op=dist.ReduceOp.MAX)
    if r == 1 % n:
        check(t.cpu(), reduce_ref(inputs, dist.ReduceOp.MAX), "reduce")
    outs = [torch.empty(numel, dtype=dtype, device=dev()) for _ in range(n)]
    dist.all_gather(outs, inputs[r].to(dev(), copy=True))
    for q in range(n):
        check(outs[q].cpu(), inputs[q], f"all_gather part {q}")
    whole = torch.empty(n * numel, dtype=dtype, device=dev())
    all_gather_into_tensor(whole, inputs[r].to(dev(), copy=True))
    check(whole.cpu(), torch.cat(inputs), "all_gather_into_tensor")
    chunks = [[data(q, numel, dtype, salt=p) for p in range(n)] for q in range(n)]  # chunks[q][p]: q's part p
    out = torch.empty(numel, dtype=dtype, device=dev())
    dist.reduce_scatter(out, [c.to(dev(), copy=True) for c in chunks[r]], op=dist.ReduceOp.SUM)
    check(out.cpu(), reduce_ref([chunks[q][r] for q in range(n)], dist.ReduceOp.SUM), "reduce_scatter")
    reduce_scatter_tensor(out, torch.cat(chunks[r]).to(dev(), copy=True), op=dist.ReduceOp.SUM)
    check(out.cpu(), reduce_ref([chunks[q][r] for q in range(n)], dist.ReduceOp.SUM), "reduce_scatter_tensor")
    out = torch.empty(n * 5, dtype=dtype, device=dev())
    dist.all_to_all_single(out, torch.cat([chunks[r][p][:5] for p in range(n)]).to(dev(), copy=True))
    check(out.cpu(), torch.cat([chunks[q][r][:5] for q in range(n)]), "all_to_all_single")
    outs = [torch.empty(7, dtype=dtype, device=dev()) for _ in range(n)]
    dist.all_to_all(outs, [chunks[r][p][:7].to(dev(), copy=True) for p in range(n)])
    for q in range(n):
        check(outs[q].cpu(), chunks[q][r][:7], f"all_to_all from {q}")
    gathered = [torch.empty(numel, dtype=dtype, device=dev()) for _ in range(n)] if r == 0 else None
    dist.gather(inputs[r].to(dev(), copy=True), gathered, dst=0)
    if r == 0:
        for q in range(n):
            check(gathered[q].cpu(), inputs[q], f"gather part {q}")
    out = torch.empty(numel, dtype=dtype, device=dev())
    dist.scatter(out, [c.to(dev(), copy=True) for c in chunks[0]] if r == 0 else None, src=0)
    check(out.cpu(), chunks[0][r], "scatter")


def test_non_contiguous_and_async(r, n):
    base = [data(q, 64 * 33, torch.float32).view(64, 33) for q in range(n)]
    t = base[r].to(dev(), copy=True)
    view = t[:, ::2]  # every other column: not contiguous
    dist.all_reduce(view)
    want = base[r].clone()
    want[:, ::2] = reduce_ref([b[:, ::2].contiguous() for b in base], dist.ReduceOp.SUM)
    check(t.cpu(), want, "all_reduce of a strided view")
    t = base[r].to(dev(), copy=True)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0] * 2)
    work.wait()
    check(t.cpu(), reduce_ref(base, dist.ReduceOp.SUM), "async all_reduce")
    check(fut.wait().cpu(), reduce_ref(base, dist.ReduceOp.SUM) * 2, "future chained on all_reduce")


def test_stream_order(r, n):
    """The op reads its input after the work queued before it on torch's current stream, and
    work queued after it sees the result: a slow kernel fills the input on a side stream."""
    if dev().type != "cuda":
        return
    side = torch.cuda.Stream(device=dev())
    with torch.cuda.stream(side):
        a = torch.randn(2048, 2048, device=dev())
        for _ in range(8):
            a = a @ a / 2048.0  # keeps the stream busy for a while
        t = torch.full((1 << 20,), float(r + 1), device=dev()) + 0 * a.sum()
        dist.all_reduce(t)
        doubled = t * 2
    side.synchronize()
    want = float(sum(q + 1 for q in range(n)))
    assert torch.all(t == want).item(), f"stream order: all_reduce result {t[:4].tolist()}, expected {want}"
    assert torch.all(doubled == 2 * want).item(), "stream order: work after the op did not see its result"


def test_point_to_point(r, n):
    if n < 2:
        return
    peer = r ^ 1
    if peer >= n:
        return
    mine = data(r, 1 << 18, torch.float32).to(dev(), copy=True)
    got = torch.empty_like(mine)
    ops = [dist.P2POp(dist.irecv, got, peer), dist.P2POp(dist.isend, mine, peer)]  # receive first
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check(got.cpu(), data(peer, 1 << 18, torch.float32), "batch_isend_irecv")
    # Both receive first, with tags out of order, and without batch_isend_irecv.
    a, b = torch.empty(1000, device=dev()), torch.empty(7, device=dev())
    reqs = [dist.irecv(a, peer, tag=1), dist.irecv(b, peer, tag=2)]
    reqs += [dist.isend(data(r, 7, torch.float32).to(dev(), copy=True), peer, tag=2),
             dist.isend(data(r, 1000, torch.float32).to(dev(), copy=True), peer, tag=1)]
    for w in reqs:
        w.wait()
    check(a.cpu(), data(peer, 1000, torch.float32), "irecv tag 1")
    check(b.cpu(), data(peer, 7, torch.float32), "irecv tag 2")
    if r == 0:
        dist.send(mine, dst=1)
    elif r == 1:
        assert dist.recv(got) == 0, "recv from any source: wrong sender"
        check(got.cpu(), data(0, 1 << 18, torch.float32), "send/recv from any source")


def test_coalescing(r, n):
    """torch 2.x's _coalescing_manager on a device: its all_reduces become one
    allreduce_coalesced, then endCoalescing's Work covers the block (copy-backs included)."""
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 2):
        return  # the backend implements coalescing for torch 2.2 and later
    from torch.distributed.distributed_c10d import _coalescing_manager
    inputs = [[data(q, k + 5, torch.float32, salt=k) for q in range(n)] for k in range(3)]
    ts = [inputs[k][r].to(dev(), copy=True) for k in range(3)]
    with _coalescing_manager(device=dev(), async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    for k in range(3):
        check(ts[k].cpu(), reduce_ref(inputs[k], dist.ReduceOp.SUM), f"coalesced all_reduce {k}")


def expect_refusal(fn, words, what):
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        assert all(w in str(e) for w in words), f"{what}: refusal does not say {words}: {e}"
        return
    raise AssertionError(f"{what}: not refused")


def test_refusals(r, n):
    # Host and device tensors in one call: refused before anything is sent, on every rank.
    outs = [torch.empty(4) for _ in range(n)]
    if dev().type != "cuda":
        return
    expect_refusal(lambda: dist.all_gather(outs, torch.ones(4, device=dev())), ["device"],
                   "host outputs beside a device input")
    # A refusal whose text formats numbers (a module linked to a second, static C++ runtime
    # crashed here).
    expect_refusal(lambda: dist.broadcast(torch.ones(4, device=dev()), src=n), ["not a rank", str(n)],
                   "root out of range")
    dist.barrier()


def test_ddp(r, n):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    reference = [p.detach().clone().double() for p in model.parameters()]
    ddp = torch.nn.parallel.DistributedDataParallel(model.to(dev()),
                                                    device_ids=[dev().index] if dev().type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    batches = [torch.Generator().manual_seed(q) for q in range(n)]
    for _ in range(3):
        xs = [torch.randn(8, 16, generator=g) for g in batches]
        opt.zero_grad()
        ddp(xs[r].to(dev(), copy=True)).pow(2).mean().backward()
        opt.step()
        # The reference step in float64 on the CPU: the gradient averaged over every rank's batch.
        grads = [torch.zeros_like(p) for p in reference]
        for x in xs:
            ps = [p.clone().requires_grad_() for p in reference]
            h = torch.relu(x.double() @ ps[0].T + ps[1])
            (h @ ps[2].T + ps[3]).pow(2).mean().backward()
            for g, p in zip(grads, ps):
                g += p.grad / n
        reference = [p - 0.1 * g for p, g in zip(reference, grads)]
    for got, want in zip(ddp.parameters(), reference):
        assert torch.allclose(got.detach().cpu().double(), want, atol=1e-4), "DDP on CUDA drifted from the reference"


def main():
    r, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if dev().type == "cuda":
        torch.cuda.set_device(dev())
    dist.init_process_group("coll", timeout=datetime.timedelta(seconds=120))
    for test in (test_all_reduce, test_rooted_and_lists, test_non_contiguous_and_async, test_stream_order,
                 test_point_to_point, test_coalescing, test_refusals, test_ddp):
        test(r, n)
        print(f"rank {r}: {test.__name__} passed", flush=True)
    dist.destroy_process_group()
    print(f"CUDA OK rank {r}", flush=True)


if __name__ == "__main__":
    main()
