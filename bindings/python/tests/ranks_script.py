"""One rank of the Python binding tests; test_collectives.py starts it under collrun -n N.

    collrun -n 3 python3 ranks_script.py collectives|errors|abort|leak

Checks every collective against a numpy reference for every dtype, counts 0, 1 and 1009, in
place and out of place; or the errors the bindings raise; or abort. Inputs depend on rank and
index (so a misplaced chunk fails) and are small integers (so float16 sums and products are
exact). Exits non-zero on the first failure, with a message naming the case.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

import coll

DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64]
COUNTS = [0, 1, 1009]


def data(rank, count, dtype, salt=0):
    i = np.arange(count, dtype=np.int64)
    return (((rank + 1) * 7 + i * 3 + salt) % 11 + 1).astype(dtype)


def is_float(dtype):
    return np.dtype(dtype).kind == "f"


def reduced(op, arrays, dtype):
    stack = np.stack(arrays) if arrays[0].size else np.zeros((len(arrays), 0), dtype)
    with np.errstate(over="ignore"):
        if op == "sum":
            return stack.sum(axis=0, dtype=dtype)
        if op == "prod":
            return stack.prod(axis=0, dtype=dtype)
        if op == "min":
            return stack.min(axis=0, initial=np.iinfo(dtype).max if not is_float(dtype) else np.inf).astype(dtype)
        if op == "max":
            return stack.max(axis=0, initial=np.iinfo(dtype).min if not is_float(dtype) else -np.inf).astype(dtype)
        if op == "avg":
            return (stack.astype(np.float64).sum(axis=0) / len(arrays)).astype(dtype)
    raise ValueError(op)


def check(got, want, what):
    assert got is not None, f"{what}: no result"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.size == want.size, f"{what}: {got.size} elements, expected {want.size}"
    got, want = got.reshape(-1), want.reshape(-1)
    if is_float(want.dtype):
        rtol = 1e-2 if want.dtype == np.float16 else 1e-6
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        bad = np.nonzero(got != want)[0][:5]
        raise AssertionError(f"{what}: wrong at {bad.tolist()}: got {got[bad].tolist()}, expected {want[bad].tolist()}")


def collectives(comm):
    r, n = comm.rank, comm.size
    for dt in DTYPES:
        for count in COUNTS:
            case = f"{np.dtype(dt).name} x {count}"
            mine = data(r, count, dt)
            everyone = [data(p, count, dt) for p in range(n)]
            ops = ["sum", "prod", "min", "max"] + (["avg"] if is_float(dt) else [])
            for op in ops:
                want = reduced(op, everyone, dt)
                x = mine.copy()
                w = comm.allreduce(x, op=op)
                assert w.wait() is True
                check(x, want, f"allreduce {op} in place {case}")
                assert w.result is x
                x = mine.copy()
                comm.allreduce(x, x, op=op).wait()
                check(x, want, f"allreduce {op} recv=send {case}")
                out = np.full(count, 99, dt)
                check(comm.allreduce(mine, out, op=coll.ReduceOp.__members__[op]).get(), want,
                      f"allreduce {op} out of place {case}")
                check(mine, data(r, count, dt), f"allreduce {op} left send alone {case}")
                for root in range(n):
                    x = mine.copy()
                    w = comm.reduce(x, op=op, root=root)
                    w.wait()
                    if r == root:
                        check(x, want, f"reduce {op} root {root} in place {case}")
                    else:
                        assert w.result is None
                    out = np.zeros(count, dt)
                    w = comm.reduce(mine, out, op=op, root=root)
                    w.wait()
                    if r == root:
                        check(out, want, f"reduce {op} root {root} out of place {case}")
            for root in range(n):
                x = mine.copy() if r == root else np.zeros(count, dt)
                comm.broadcast(x, root=root).wait()
                check(x, everyone[root], f"broadcast root {root} in place {case}")
                out = np.zeros(count, dt)
                comm.broadcast(mine, root=root, recv=out).wait()
                check(out, everyone[root], f"broadcast root {root} out of place {case}")

            # allgather: allocated, given, in place (send is chunk r of recv)
            want = np.stack(everyone) if count else np.zeros((n, 0), dt)
            got = comm.allgather(mine).get()
            assert got.shape == (n, count), got.shape
            check(got, want, f"allgather allocated {case}")
            out = np.zeros(n * count, dt)
            check(comm.allgather(mine, out).get(), want, f"allgather out of place {case}")
            out = np.zeros((n, count), dt)
            out[r] = mine
            comm.allgather(out[r], out).wait()
            check(out, want, f"allgather in place {case}")

            # reduce_scatter: send has n chunks of count
            big = [data(p, n * count, dt, salt=5) for p in range(n)]
            for op in ["sum", "max"]:
                want = reduced(op, big, dt)[r * count:(r + 1) * count]
                got = comm.reduce_scatter(big[r].reshape(n, count), op=op).get()
                assert got.shape == (count,), got.shape
                check(got, want, f"reduce_scatter {op} allocated {case}")
                out = np.zeros(count, dt)
                check(comm.reduce_scatter(big[r], out, op=op).get(), want, f"reduce_scatter {op} out of place {case}")
                x = big[r].copy()
                comm.reduce_scatter(x, x[r * count:(r + 1) * count], op=op).wait()
                check(x[r * count:(r + 1) * count], want, f"reduce_scatter {op} in place {case}")

            # alltoall: chunk p of rank q's send lands in chunk q of rank p's recv
            want = np.concatenate([big[q][r * count:(r + 1) * count] for q in range(n)])
            check(comm.alltoall(big[r]).get(), want, f"alltoall allocated {case}")
            out = np.zeros(n * count, dt)
            check(comm.alltoall(big[r], out).get(), want, f"alltoall out of place {case}")

            for root in range(n):
                # gather: allocated, given, in place on the root
                want = np.stack(everyone) if count else np.zeros((n, 0), dt)
                w = comm.gather(mine, root=root)
                w.wait()
                if r == root:
                    check(w.result, want, f"gather root {root} allocated {case}")
                else:
                    assert w.result is None
                out = np.zeros((n, count), dt)
                comm.gather(mine, out if r == root else None, root=root).wait()
                if r == root:
                    check(out, want, f"gather root {root} out of place {case}")
                    out[:] = 0
                    out[r] = mine
                    comm.gather(out[r], out, root=root).wait()
                    check(out, want, f"gather root {root} in place {case}")
                else:
                    comm.gather(mine, root=root).wait()
                # scatter: allocated (every rank passes send to size it), given recv, in place
                want = big[root][r * count:(r + 1) * count]
                got = comm.scatter(big[root].reshape(n, count), root=root).get()
                check(got, want, f"scatter root {root} allocated {case}")
                out = np.zeros(count, dt)
                comm.scatter(big[r] if r == root else None, out, root=root).wait()
                check(out, want, f"scatter root {root} out of place {case}")
                x = big[r].copy()
                recv = x[r * count:(r + 1) * count] if r == root else np.zeros(count, dt)
                comm.scatter(x if r == root else None, recv, root=root).wait()
                check(recv, want, f"scatter root {root} in place {case}")

            # send/recv around the ring, grouped so that both directions progress together
            out = np.zeros(count, dt)
            with comm.group():
                ws = comm.send(mine, (r + 1) % n)
                wr = comm.recv(out, (r - 1) % n)
            assert wr.wait() and ws.wait()
            check(out, everyone[(r - 1) % n], f"send/recv ring {case}")
            comm.group_start()
            comm.send(mine, (r + 1) % n)
            w = comm.recv(out, (r - 1) % n)
            comm.group_end()
            check(w.get(), everyone[(r - 1) % n], f"send/recv group_start/end {case}")
    # Receive first without a group, tags, any source (peer None).
    if n > 1:
        right, left = (r + 1) % n, (r - 1) % n
        a, b = np.zeros(5, np.int32), np.zeros(5, np.int32)
        wb, wa = comm.recv(b, left, tag=2), comm.recv(a, left, tag=1)
        comm.send(np.full(5, r, np.int32), right, tag=1).wait()
        comm.send(np.full(5, 100 + r, np.int32), right, tag=2).wait()
        wa.wait(), wb.wait()
        check(a, np.full(5, left, np.int32), "recv tag 1 before send")
        check(b, np.full(5, 100 + left, np.int32), "recv tag 2 before send")
        if r == 0:
            for _ in range(n - 1):
                got = np.zeros(1, np.int64)
                w = comm.recv(got, tag=9)
                w.wait()
                assert got[0] == w.source * 7, (got, w.source)
        else:
            comm.send(np.array([r * 7], np.int64), 0, tag=9).wait()
    # split: even and odd ranks; key reverses the order.
    half = comm.split(r % 2, key=-r)
    members = list(range(r % 2, n, 2))
    assert half.size == len(members) and half.rank == len(members) - 1 - members.index(r), (half.rank, half.size)
    check(half.allreduce(np.array([r], np.int64)).get(), np.array([sum(members)], np.int64), "split all-reduce")
    half.close()
    assert comm.split(coll.SPLIT_NOCOLOR) is None
    comm.barrier().wait()


def expect(exc_type, fn, code=None, what=""):
    try:
        fn()
    except exc_type as e:
        if code is not None:
            assert getattr(e, "code", None) == code, f"{what}: code {getattr(e, 'code', None)!r}, expected {code!r}: {e}"
        return e
    raise AssertionError(f"{what}: no {exc_type.__name__} raised")


def errors(comm):
    r, n = comm.rank, comm.size
    x = np.arange(8 * n, dtype=np.float32)
    e = expect(coll.Error, lambda: comm.alltoall(x, x), "InvalidArgument", "alltoall in place")
    assert isinstance(e, RuntimeError) and "all-to-all" in str(e), str(e)
    expect(coll.Error, lambda: comm.send(x, r), "InvalidArgument", "send to oneself")
    expect(coll.Error, lambda: comm.broadcast(x, root=n), "InvalidArgument", "root out of range")
    expect(ValueError, lambda: comm.allreduce(x[::2]), what="non-contiguous")
    expect(ValueError, lambda: comm.allreduce(np.asfortranarray(x.reshape(2, -1))), what="Fortran order")
    expect(TypeError, lambda: comm.allreduce(x.astype(np.int16)), what="int16")
    expect(TypeError, lambda: comm.allreduce(x.astype(np.complex64)), what="complex64")
    expect(TypeError, lambda: comm.allreduce(list(range(4))), what="a list")
    expect(TypeError, lambda: comm.allreduce(x, x.astype(np.float64)), what="dtype mismatch")
    expect(ValueError, lambda: comm.allreduce(x, np.zeros(3, np.float32)), what="size mismatch")
    expect(ValueError, lambda: comm.allreduce(x, op="median"), what="unknown op")
    ro = x.copy()
    ro.flags.writeable = False
    expect(ValueError, lambda: comm.allreduce(ro), what="read-only in place")
    expect(ValueError, lambda: comm.allgather(x, np.zeros(1, np.float32)), what="allgather recv size")
    expect(ValueError, lambda: comm.reduce_scatter(np.zeros(n * 3 + 1, np.float32)), what="indivisible send")
    comm.group_start()
    expect(coll.Error, lambda: comm.allreduce(x), "InvalidArgument", "collective inside a group")
    comm.group_end()
    expect(coll.Error, lambda: comm.group_end(), "InvalidArgument", "group_end without group_start")

    # Works: sequence numbers, test(), wait(timeout) and error()
    w1 = comm.allreduce(x.copy())
    w2 = comm.barrier()
    assert w2.sequence > w1.sequence, (w1.sequence, w2.sequence)
    assert w2.wait(timeout=30.0) is True and w1.test() and w1.error() is None
    assert "coll.Work" in repr(w1)
    # A Work dropped at once: the bindings keep its arrays alive until the op completes.
    for _ in range(20):
        comm.allreduce(np.ones(100000, np.float32))
    comm.barrier().wait()

    # The GIL is released while waiting: a Python thread keeps running while rank 0 is late.
    ticks = [0]
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    if r == 0:
        time.sleep(0.5)
    before = ticks[0]
    comm.barrier().wait()
    waited = ticks[0] - before
    stop.set()
    t.join()
    if r != 0:
        assert waited > 20, f"only {waited} ticks while waiting for the barrier: the GIL was held"

    # set_algorithms between ops: forced algorithms give the same sums; a bad rule is refused.
    for rules in ("allreduce:rd", "allreduce:ring", ""):
        comm.set_algorithms(rules)
        got = comm.allreduce(np.full(5000, r + 1, np.float32)).get()
        assert np.all(got == n * (n + 1) / 2), f"set_algorithms({rules!r}): {got[:4]}"
    expect(coll.Error, lambda: comm.set_algorithms("allreduce:nosuch"), "InvalidArgument", "unknown algorithm")

    assert comm.size == n and 0 <= comm.rank < n and comm.local_rank >= 0
    assert isinstance(comm.describe(), str)
    assert comm.async_error() is None
    comm.close()
    assert comm.closed
    expect(coll.Error, lambda: comm.barrier(), "InvalidArgument", "closed communicator")


def abort(comm):
    comm.barrier().wait()
    comm.abort()
    comm.abort()  # idempotent
    w = comm.barrier()
    e = expect(coll.Error, w.wait, "PeerLost", "op after abort")
    assert w.error() is not None and w.error().code == "PeerLost"


def forked(comm):
    """A child forked after init cannot use its parent's communicator; the parent carries on."""
    x = np.ones(64, np.float32)
    comm.allreduce(x).wait()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            comm.allreduce(x)
        except coll.Error as e:
            code = 0 if e.code == "InvalidArgument" and "forked child" in str(e) else 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"
    x[:] = 1
    comm.allreduce(x).wait()
    assert x[0] == comm.size, x[0]


def after_close(comm):
    comm.close()
    expect(coll.Error, lambda: comm.allreduce(np.ones(4, np.float32)), "InvalidArgument", "op after close")


def library_memory(comm):
    """coll.alloc arrays as send and receive buffers: large enough (4 MiB a rank) to be read
    straight out of the sender's memory by ranks on the same host."""
    n, count = comm.size, (1 << 20) + 3
    x = coll.alloc(count, np.float32)
    check(x, np.zeros(count, np.float32), "coll.alloc zeroes")
    x[:] = data(comm.rank, count, np.float32)
    out = coll.alloc((n, count), np.float32)
    comm.allgather(x, out).wait()
    check(out, np.stack([data(r, count, np.float32) for r in range(n)]), "allgather from coll.alloc")
    comm.allreduce(x).wait()
    check(x, sum(data(r, count, np.float32) for r in range(n)), "allreduce in coll.alloc")
    view = out[1:]  # a view keeps the memory alive after the array it came from is gone
    del out
    check(view[0], data(1, count, np.float32), "a view of coll.alloc memory")
    expect(TypeError, lambda: coll.alloc(4, np.complex64), what="coll.alloc of complex64")
    expect(ValueError, lambda: coll.alloc((-1,), np.float32), what="coll.alloc of a negative shape")


def survivors(comm):
    """The last rank dies (SIGKILL); the others find it, agree on it and shrink without it."""
    n, x = comm.size, np.ones(1 << 14, np.float32)
    comm.allreduce(x).wait()
    if comm.rank == n - 1:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        for _ in range(10000):
            comm.allreduce(x).wait()
        raise AssertionError("no op failed after a rank was killed")
    except coll.Error as e:
        assert e.code in ("PeerLost", "Timeout"), e
    end = time.monotonic() + 10
    while comm.failed_ranks() != [n - 1] and time.monotonic() < end:
        time.sleep(0.01)
    assert comm.failed_ranks() == [n - 1], comm.failed_ranks()
    value, failed = comm.agree(0xF00 | 1 << comm.rank)
    assert (value, failed) == (0xF00, [n - 1]), (value, failed)
    with comm.shrink() as rest:
        assert (rest.size, rest.rank) == (n - 1, comm.rank), (rest.size, rest.rank)
        y = np.full(5, comm.rank + 1, np.int64)
        rest.allreduce(y).wait()
        check(y, np.full(5, (n - 1) * n // 2, np.int64), "allreduce after shrink")
        if rest.rank == 0:  # a replacement joins through the job's store and secret
            env = dict(os.environ, COLL_SURVIVORS_JOINER="1")
            JOINER.append(subprocess.Popen([sys.executable, __file__, "joiner"], env=env))
        for _ in range(500):  # grow until it is in: a grow admits whoever waits at that moment
            grown = rest.grow()
            if grown.size == n:
                break
            grown.close()
            time.sleep(0.02)
        with grown:
            assert (grown.size, grown.rank) == (n, rest.rank), (grown.size, grown.rank)
            z = np.ones(7, np.float32)
            grown.allreduce(z).wait()
            check(z, np.full(7, n, np.float32), "allreduce after grow")
        if JOINER:
            assert JOINER[0].wait(timeout=60) == 0, "the joiner failed"


JOINER = []


def joiner():
    """Started by a survivor: joins the running job (collrun's store) as its last rank."""
    comm = coll.join(os.environ["COLL_STORE_ADDR"], os.environ["COLL_JOB_SECRET"])
    with comm:
        z = np.ones(7, np.float32)
        comm.allreduce(z).wait()
        check(z, np.full(7, comm.size, np.float32), "the joiner's allreduce")
        print(f"joiner: rank {comm.rank} of {comm.size}: joiner ok", flush=True)


def revoke(comm):
    """Rank 0 revokes while the others wait for a message it never sends; all shrink to all."""
    buf = np.zeros(16, np.float32)
    comm.barrier().wait()
    if comm.rank == 0:
        time.sleep(0.2)
        comm.revoke()
    else:
        e = expect(coll.Error, lambda: comm.recv(buf, 0).wait(), "PeerLost", "a receive across a revoke")
        assert "revoked by rank 0" in str(e), e
    expect(coll.Error, lambda: comm.barrier().wait(), "PeerLost", "an op after a revoke")
    with comm.shrink() as again:
        assert (again.size, again.rank) == (comm.size, comm.rank)
        y = np.ones(3, np.int32)
        again.allreduce(y).wait()
        check(y, np.full(3, comm.size, np.int32), "allreduce after revoke and shrink")
    expect(TypeError, lambda: comm.agree("not a number"), what="agree with a string")


LEAKED = []


def main():
    mode = sys.argv[1]
    if mode == "joiner":
        return joiner()
    if mode == "leak":  # left for the interpreter to destroy at exit
        comm = coll.init()
        LEAKED.extend([comm, comm.allreduce(np.ones(1 << 16, np.float32))])
        print(f"rank {comm.rank}: {mode} ok", flush=True)
        return
    with coll.init() as comm:
        {"collectives": collectives, "errors": errors, "abort": abort, "forked": forked,
         "after_close": after_close, "library_memory": library_memory, "survivors": survivors,
         "revoke": revoke}[mode](comm)
        print(f"rank {comm.rank if not comm.closed else '?'}: {mode} ok", flush=True)


if __name__ == "__main__":
    main()
