"""What torch 2.x asks of a process-group backend beyond its collectives, on backend "coll":
a device map ("cpu:coll,cuda:nccl"), sequence numbers, _coalescing_manager, split_group,
set_timeout-free one-second op timeouts, monitored_barrier naming the late rank, bad input
refused before anything is sent (the group usable afterwards), _abort_process_group failing
a pending receive at once, and destroy_process_group leaving no thread or shared-memory
segment behind (a second init in the same process works).

    torchrun --nproc-per-node 3 tests/torch2/backend_api_check.py     (2 to 4 ranks)

Each section prints "rank R: SECTION: ok" (or "skipped" where this torch lacks the API), and at
the end "rank R: backend_api_check: ok (...)"; the first failure raises, naming the section.
Runs on torch 2.x with coll pip-installed (tests/install/pip_test.sh runs it).
"""
import datetime
import importlib
import os
import struct
import threading
import time

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

SECTIONS = []


def section(fn):
    SECTIONS.append(fn)
    return fn


def expect_error(what, fn, *words):
    """fn() must raise a RuntimeError/ValueError whose message holds every one of `words`."""
    try:
        fn()
    except (RuntimeError, ValueError, TypeError) as e:
        msg = str(e)
        missing = [w for w in words if w.lower() not in msg.lower()]
        assert not missing, f"{what}: the error does not say {missing}: {msg}"
        return msg
    raise AssertionError(f"{what}: no error was raised")


def native_threads():
    return len(os.listdir("/proc/self/task"))


def coll_segments(owner=None):
    """coll's segments in /dev/shm; with `owner`, only those whose header names that pid as
    their owner (src/transport/shm/layout.h: owner_pid at byte 20), so that another job's
    segment, briefly named while its ranks start (the pip tests run side by side), is not
    taken for this one's."""
    try:
        names = sorted(n for n in os.listdir("/dev/shm") if "coll" in n)
    except FileNotFoundError:
        return []
    if owner is None:
        return names
    mine = []
    for n in names:
        try:
            with open(f"/dev/shm/{n}", "rb") as f:
                head = f.read(24)
        except OSError:
            continue  # unlinked meanwhile
        if len(head) == 24 and struct.unpack_from("<i", head, 20)[0] == owner:
            mine.append(n)
    return mine


def init(backend):
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
    return dist.get_rank(), dist.get_world_size()


@section
def device_map(r, n):
    """The default group was made with a device map; CPU tensors go to coll."""
    backend = dist.get_backend()
    assert "coll" in backend, backend
    cpu = dist.group.WORLD._get_backend(torch.device("cpu"))
    assert cpu.name() == "coll", cpu.name()
    x = torch.full((5,), float(r + 1))
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((5,), float(n * (n + 1) // 2))), x
    return backend


@section
def sequence_numbers(r, n):
    # Asked of the backend: torch before about 2.6 answers the group-level call only for its own
    # backends ("does not yet support sequence numbers").
    pg = dist.group.WORLD._get_backend(torch.device("cpu"))
    before = pg._get_sequence_number_for_group()
    for _ in range(3):
        dist.all_reduce(torch.ones(2))
    after = pg._get_sequence_number_for_group()
    assert after == before + 3, (before, after)
    seqs = [None] * n
    dist.all_gather_object(seqs, after)
    assert len(set(seqs)) == 1, f"sequence numbers differ across ranks: {seqs}"


@section
def coalescing_manager(r, n):
    # torch turns a block of all_reduces into one allreduce_coalesced with the first one's op.
    a, b = torch.full((3,), float(r)), torch.full((1000,), 1.0, dtype=torch.float32)
    with c10d._coalescing_manager(device=torch.device("cpu"), async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    assert torch.equal(a, torch.full((3,), float(sum(range(n))))), a
    assert torch.equal(b, torch.full((1000,), float(n))), b
    # all_gather_into_tensor and reduce_scatter_tensor in a block become their coalesced forms.
    outs = [torch.empty(2 * n), torch.empty(3 * n, dtype=torch.float64)]
    ins = [torch.full((2,), float(r)), torch.full((3,), float(-r), dtype=torch.float64)]
    with c10d._coalescing_manager(device=torch.device("cpu")):
        for o, i in zip(outs, ins):
            dist.all_gather_into_tensor(o, i)
    assert torch.equal(outs[0], torch.arange(n, dtype=torch.float32).repeat_interleave(2)), outs[0]
    assert torch.equal(outs[1], -torch.arange(n, dtype=torch.float64).repeat_interleave(3)), outs[1]
    rs = [torch.empty(4), torch.empty(1, dtype=torch.int64)]
    with c10d._coalescing_manager(device=torch.device("cpu")):
        dist.reduce_scatter_tensor(rs[0], torch.arange(4 * n, dtype=torch.float32))
        dist.reduce_scatter_tensor(rs[1], torch.full((n,), r + 1, dtype=torch.int64))
    assert torch.equal(rs[0], torch.arange(4 * r, 4 * r + 4, dtype=torch.float32) * n), rs[0]
    assert rs[1].item() == n * (n + 1) // 2, rs[1]


class NotInThisTorch(Exception):
    pass


@section
def split_group(r, n):
    if not hasattr(dist, "split_group"):
        raise NotInThisTorch("dist.split_group")
    # The last rank alone, the others in reverse order: a group's rank is its place in the list.
    first = list(range(n - 2, -1, -1))
    g = dist.split_group(split_ranks=[first, [n - 1]])
    assert g is not None and g != dist.GroupMember.NON_GROUP_MEMBER, g
    members = first if r in first else [n - 1]
    assert dist.get_rank(g) == members.index(r), (dist.get_rank(g), members)
    assert dist.get_process_group_ranks(g) == members, dist.get_process_group_ranks(g)
    x = torch.tensor([float(r)])
    dist.all_reduce(x, group=g)
    assert x.item() == float(sum(members)), (x, members)
    # Ranks left out of every split get no group and need not take part in its bootstrap.
    h = dist.split_group(split_ranks=[[0, 1]])
    if r in (0, 1):
        y = torch.tensor([float(r + 1)])
        dist.all_reduce(y, group=h)
        assert y.item() == 3.0, y
    else:
        assert h == dist.GroupMember.NON_GROUP_MEMBER, h
    dist.barrier()


@section
def bad_input(r, n):
    x = torch.ones(4)
    # (A meta tensor never reaches a backend: torch answers it itself.)
    expect_error("all_reduce of an unsupported dtype", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)),
                 "allreduce", "Short")
    expect_error("all_reduce with an unsupported op", lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BAND),
                 "allreduce", "BAND")
    expect_error("all_reduce_coalesced of mixed dtypes",
                 lambda: dist.all_reduce_coalesced([torch.ones(2), torch.ones(2, dtype=torch.int64)]), "dtype")
    expect_error("all_gather_into_tensor into a tensor of the wrong size",
                 lambda: dist.all_gather_into_tensor(torch.empty(n * 4 + 1), x), "allgather", "elements")
    expect_error("broadcast from a root outside the group", lambda: dist.broadcast(x, src=n + 3), "rank")
    expect_error("send with a negative tag", lambda: dist.send(x, dst=(r + 1) % n, tag=-2), "tag")
    outsiders = dist.new_group([0, 1])
    if r >= 2:  # torch itself refuses ops on a group a rank is not in: a warning and no op
        assert dist.all_reduce(x, group=outsiders) is None
    # Nothing was sent: the group still agrees.
    y = torch.full((4,), float(r))
    dist.all_reduce(y)
    assert torch.equal(y, torch.full((4,), float(sum(range(n))))), y


@section
def one_second_timeout(r, n):
    """An op some ranks never join fails within its group's one-second timeout, naming it."""
    g = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=1))
    dist.barrier()
    if r == 0:
        t0 = time.monotonic()
        msg = expect_error("all_reduce without the others", lambda: dist.all_reduce(torch.ones(3), group=g),
                           "timed out")
        took = time.monotonic() - t0
        assert took < 10, f"the one-second timeout took {took:.1f} s: {msg}"
    dist.barrier()
    dist.destroy_process_group(g)


def monitored(group, seconds, wait_all_ranks=False):
    """dist.monitored_barrier; torch before about 2.6 refuses it for any backend not named gloo,
    and the group's own method is the way there."""
    timeout = datetime.timedelta(seconds=seconds)
    try:
        return dist.monitored_barrier(group, timeout=timeout, wait_all_ranks=wait_all_ranks)
    except ValueError as e:
        if "only implemented for GLOO" not in str(e):
            raise
    return (group or c10d._get_default_group()).monitored_barrier(timeout, wait_all_ranks)


@section
def monitored_barrier(r, n):
    g = dist.new_group(list(range(n)))
    if r != n - 1:
        if r == 0:
            expect_error("monitored_barrier with the last rank late",
                         lambda: monitored(g, 1, wait_all_ranks=True),
                         f"{n - 1}", "monitoredBarrier")
        else:
            try:  # rank 0 fails and never releases the others: each fails at its own deadline
                monitored(g, 2)
            except RuntimeError:
                pass
    dist.barrier()
    monitored(None, 30)  # everyone on time: passes


@section
def abort(r, n):
    """A receive that will never be matched fails at once when its group is aborted."""
    if not hasattr(c10d, "_abort_process_group"):
        raise NotInThisTorch("_abort_process_group")
    g = dist.new_group(list(range(n)))
    dist.barrier()
    if r == 1:
        work = dist.irecv(torch.empty(3), src=0, group=g)
        t0 = time.monotonic()
        threading.Timer(0.5, lambda: c10d._abort_process_group(g)).start()
        expect_error("irecv on an aborted group", work.wait, "abort")
        took = time.monotonic() - t0
        assert took < 10, f"the aborted receive took {took:.1f} s to fail"
    dist.barrier()


def lifecycle(backend, threads0, segments0):
    """destroy_process_group leaves nothing behind, and the process can start again."""
    dist.destroy_process_group()
    leaked = [s for s in coll_segments(os.getpid()) if s not in segments0]
    assert not leaked, f"shared-memory segments left after destroy_process_group: {leaked}"
    threads = native_threads()
    assert threads <= threads0 + 2, f"{threads - threads0} more threads after destroy_process_group than before init"
    r, n = init(backend)
    x = torch.ones(2)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((2,), float(n))), x
    dist.destroy_process_group()
    return r


def main():
    if not hasattr(dist.Backend, "_ensure_backend_registered"):
        importlib.import_module("coll.torch")  # torch older than its entry points: registers "coll"
    # Without a GPU torch cannot make the NCCL half: the map then names coll for the CPU alone.
    backend = "cpu:coll,cuda:nccl" if torch.cuda.is_available() else "cpu:coll"
    threads0, segments0 = native_threads(), coll_segments()
    r, n = init(backend)
    assert n >= 3, "run with 3 or 4 ranks (split_group and monitored_barrier need a third)"
    absent = []
    for fn in SECTIONS:
        try:
            fn(r, n)
        except NotInThisTorch as e:
            absent.append(str(e))
            print(f"rank {r}: {fn.__name__}: skipped: torch {torch.__version__} has no {e}", flush=True)
            continue
        except Exception as e:
            raise AssertionError(f"rank {r}: {fn.__name__}: {e}") from e
        print(f"rank {r}: {fn.__name__}: ok", flush=True)
    lifecycle(backend, threads0, segments0)
    print(f"rank {r}: lifecycle: ok (backend {backend!r})", flush=True)
    print(f"rank {r}: backend_api_check: ok ({len(SECTIONS) + 1 - len(absent)} sections on torch {torch.__version__}"
          + (f"; not in it: {', '.join(absent)}" if absent else "") + ")", flush=True)


if __name__ == "__main__":
    main()
