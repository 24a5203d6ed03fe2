"""coll.tensorflow's ops against numpy references, on every rank of a job (2 to 4 ranks):

    build/bin/collrun -n 3 python tests/tensorflow/ops_check.py

Every op, dtype (float16, bfloat16, float32, float64, int32, int64) and reduction, in eager mode
and inside tf.function, at odd sizes; all-gather with ranks that differ in the first dimension;
special values (inf, nan, -0.0) through min/max/sum; allreduce_many's buckets, "auto" among them;
bad input refused before anything is sent;
gradients against finite differences of the global loss; shapes that differ across ranks failing
on every rank with coll's mismatch error. Each rank computes every rank's input
itself (a function of the rank), so the reference needs no communication. Prints
"rank R: SECTION: ok" per section and "rank R: ops_check: ok" at the end.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import coll.tensorflow as ct  # noqa: E402

DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64]
OPS = ["sum", "prod", "min", "max", "avg"]


def data(rank, shape, dtype, salt=0):
    """Small integers (exact in every dtype, products that do not overflow) that differ by rank."""
    n = int(np.prod(shape))
    v = (np.arange(n) * 7 + rank * 3 + salt) % 5 - 2
    if dtype in (tf.float16, tf.bfloat16, tf.float32, tf.float64):
        v = v.astype(np.float64) / 2
    return v.reshape(shape)


def reference(arrays, op):
    stack = np.stack([a.astype(np.float64) for a in arrays])
    return {"sum": stack.sum(0), "prod": stack.prod(0), "min": stack.min(0), "max": stack.max(0),
            "avg": stack.mean(0)}[op]


def check(got, want, what, dtype):
    got = np.asarray(tf.cast(got, tf.float64) if dtype == tf.bfloat16 else got, dtype=np.float64)
    tol = {tf.float16: 1e-3, tf.bfloat16: 1e-2, tf.float32: 1e-6}.get(dtype, 1e-12)
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True):
        raise AssertionError(f"{what}: got {got.ravel()[:8]} (shape {got.shape}), want {want.ravel()[:8]} "
                             f"(shape {want.shape})")


def modes(fn):
    """fn eagerly, then traced in a tf.function."""
    return [("eager", fn), ("tf.function", tf.function(fn))]


def reductions(r, n):
    for dtype in DTYPES:
        for op in OPS:
            if op == "avg" and dtype in (tf.int32, tf.int64):
                continue  # an average of integers is not an integer
            shape = (1001,) if op != "prod" else (37, 3)
            x = tf.constant(data(r, shape, dtype), dtype=dtype)
            want = reference([data(k, shape, dtype) for k in range(n)], op)
            for mode, f in modes(lambda t: ct.allreduce(t, op=op)):
                check(f(x), want, f"allreduce {op} {dtype.name} {mode}", dtype)


def buckets(r, n):
    """allreduce_many (the gradients' path) in buckets: sized by hand, tiny, and "auto" (from this
    job's links, the same size on every rank), mixed dtypes and odd sizes against numpy."""
    from coll.tensorflow import bucket_size, fusion
    assert bucket_size.plan(0.0, 1e9) == bucket_size.MIN_BYTES
    assert bucket_size.plan(1.0, 1e9) == bucket_size.MAX_BYTES
    assert bucket_size.plan(1e-3, 1e8) == int(1e-3 * 1e8 * 19), bucket_size.plan(1e-3, 1e8)
    auto = bucket_size.auto_bucket_bytes()
    every = ct.allgather(tf.constant([auto], tf.int64)).numpy()
    assert (every == auto).all(), f"ranks cut different buckets: {every}"
    specs = [((1001,), tf.float32), ((3, 7), tf.float32), ((5,), tf.int32), ((300, 301), tf.float32), ((2,), tf.float64)]
    xs = [tf.constant(data(r, s, d, salt=i), dtype=d) for i, (s, d) in enumerate(specs)]
    for size in ("auto", 64, fusion.DEFAULT_BUCKET_BYTES):
        for mode, f in modes(lambda ts: fusion.allreduce_many(list(ts), op="sum", bucket_bytes=size)):
            for i, (got, (shape, dtype)) in enumerate(zip(f(xs), specs)):
                want = reference([data(k, shape, dtype, salt=i) for k in range(n)], "sum")
                check(got, want, f"allreduce_many bucket_bytes={size} tensor {i} {mode}", dtype)
    check(fusion.allreduce_many(xs[:1], op="sum", bucket_bytes=np.int64(1024))[0],
          reference([data(k, specs[0][0], specs[0][1], salt=0) for k in range(n)], "sum"), "numpy int bucket",
          specs[0][1])
    for bad in (0, -1, "big", True, 2.5):
        for make in (lambda: fusion.allreduce_many(xs, bucket_bytes=bad),
                     lambda: ct.DistributedGradientTape(bucket_bytes=bad)):  # refused when made
            try:
                make()
            except ValueError:
                continue
            raise AssertionError(f"bucket_bytes={bad!r} was not refused")
    print(f"rank {r}: buckets: auto cut at {auto} bytes (alpha {bucket_size.measured()[0] * 1e6:.0f} us, "
          f"{bucket_size.measured()[1] / 1e9:.2f} GB/s)", flush=True)


def data_movement(r, n):
    for dtype in DTYPES:
        x = tf.constant(data(r, (13, 3), dtype), dtype=dtype)
        for mode, f in modes(lambda t: ct.broadcast(t, root=n - 1)):
            check(f(x), data(n - 1, (13, 3), dtype), f"broadcast {dtype.name} {mode}", dtype)
        # ranks differ in the first dimension: rank k has k + 1 rows
        mine = tf.constant(data(r, (r + 1, 5), dtype), dtype=dtype)
        want = np.concatenate([data(k, (k + 1, 5), dtype) for k in range(n)])
        for mode, f in modes(ct.allgather):
            check(f(mine), want, f"allgather uneven {dtype.name} {mode}", dtype)
        even = tf.constant(data(r, (3, 2), dtype), dtype=dtype)
        check(ct.allgather(even), np.concatenate([data(k, (3, 2), dtype) for k in range(n)]),
              f"allgather {dtype.name}", dtype)
        full = [data(k, (n * 3, 2), dtype) for k in range(n)]
        for op in ("sum", "max"):
            for mode, f in modes(lambda t: ct.reduce_scatter(t, op=op)):
                got = f(tf.constant(full[r], dtype=dtype))
                check(got, reference(full, op)[r * 3:(r + 1) * 3], f"reduce_scatter {op} {dtype.name} {mode}", dtype)
        blocks = [data(k, (n * 2, 3), dtype, salt=1) for k in range(n)]
        want = np.concatenate([blocks[k][r * 2:(r + 1) * 2] for k in range(n)])
        for mode, f in modes(ct.alltoall):
            check(f(tf.constant(blocks[r], dtype=dtype)), want, f"alltoall {dtype.name} {mode}", dtype)


def special_values(r, n):
    x = np.array([np.inf if r == 0 else 1.0, np.nan if r == n - 1 else 2.0, -0.0, -np.inf if r == 1 else 0.0])
    got = ct.allreduce(tf.constant(x)).numpy()
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == 0 and np.signbit(got[2]), got
    assert np.isneginf(got[3]), got  # rank 1 holds -inf (2 ranks or more)
    mx = ct.allreduce(tf.constant(x), op="max").numpy()
    assert mx[0] == np.inf and np.isnan(mx[1]), mx


def bad_input(r, n):
    def refused(what, fn, *words):
        try:
            fn()
        except (tf.errors.OpError, ValueError, TypeError) as e:
            msg = str(e)
            assert all(w.lower() in msg.lower() for w in words), f"{what}: {msg}"
            return
        raise AssertionError(f"{what}: no error")
    refused("a string tensor", lambda: ct.allreduce(tf.constant(["a"])), "allreduce")
    refused("an unknown op", lambda: ct.allreduce(tf.ones(2), op="xor"), "xor")
    refused("a root outside the job", lambda: ct.broadcast(tf.ones(2), root=n), "root")
    refused("reduce_scatter of rows the ranks do not divide", lambda: ct.reduce_scatter(tf.ones([n * 2 + 1, 2])),
            "reduce_scatter", "block")
    # nothing was sent: the ranks still agree
    check(ct.allreduce(tf.ones([3])), np.full(3, float(n)), "allreduce after refusals", tf.float32)


def global_jacobians(fn, x):
    """The theoretical and numeric Jacobians of fn at x, each summed over the ranks: every rank
    perturbs its own input at the same element at once, so the numeric one is the derivative of
    all ranks' outputs together, which the gradients summed over ranks must equal."""
    theoretical, numeric = tf.test.compute_gradient(fn, [x], delta=1e-3)
    return (ct.allreduce(tf.constant(theoretical[0])).numpy(), ct.allreduce(tf.constant(numeric[0])).numpy())


def gradients(r, n):
    x = tf.constant(data(r, (n * 2, 3), tf.float64) + 0.25, dtype=tf.float64)
    for name, fn in [("allreduce sum", lambda t: ct.allreduce(t * t)),
                     ("allreduce avg", lambda t: ct.allreduce(t * t, op="avg")),
                     ("broadcast", lambda t: ct.broadcast(t * 3.0, root=n - 1)),
                     ("allgather", lambda t: ct.allgather(t * t)),
                     ("reduce_scatter", lambda t: ct.reduce_scatter(t * t))]:
        theoretical, numeric = global_jacobians(fn, x)
        if not np.allclose(theoretical, numeric, rtol=1e-5, atol=1e-5):
            raise AssertionError(f"gradient of {name}: largest difference {np.abs(theoretical - numeric).max()}")


def mismatch(r, n):
    """Shapes that differ across ranks fail on every rank, naming both counts (last: it breaks
    the communicator, as any failed collective does)."""
    try:
        ct.allreduce(tf.ones([4 + (r == 0)]))
    except tf.errors.OpError as e:
        msg = str(e)
        # coll's code, not the ledger's wording: a rank whose peer has not reached the call yet
        # reports the ledger's "has it queued" rather than "mismatch".
        assert "(Mismatch)" in msg and "5 x f32" in msg and "4 x f32" in msg, msg
        return
    raise AssertionError("an all-reduce of 5 elements against 4 did not fail")


def main():
    ct.init()
    r, n = ct.rank(), ct.size()
    for section in (reductions, buckets, data_movement, special_values, bad_input, gradients, mismatch):
        try:
            section(r, n)
        except Exception as e:
            print(f"rank {r}: {section.__name__}: FAILED: {type(e).__name__}: {e}", flush=True)
            sys.exit(1)
        print(f"rank {r}: {section.__name__}: ok", flush=True)
    ct.shutdown()
    print(f"rank {r}: ops_check: ok ({n} ranks, TensorFlow {tf.__version__})", flush=True)


if __name__ == "__main__":
    main()
