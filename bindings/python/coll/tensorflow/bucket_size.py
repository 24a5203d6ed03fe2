"""Bucket sizes from this job's links, for `allreduce_many(..., bucket_bytes="auto")` and
`DistributedOptimizer(opt, bucket_bytes="auto")`.

A bucket's all-reduce costs a fixed time (alpha: issuing it, the algorithm's steps, the links'
latency) plus its bytes over the links' rate. Smaller buckets start sooner (each waits only for
its own gradients, so more of the all-reduce overlaps the backward pass) but pay alpha more
often. "auto" takes the smallest bucket whose alpha is at most OVERHEAD of its time:
B = alpha * rate * (1 - OVERHEAD) / OVERHEAD, between MIN_BYTES and MAX_BYTES. (coll's trainer
also weighs the backward pass's length, src/trainer/bucket_sizing.h; inside a traced Keras step
that is not known when the buckets are cut, so here only the links decide.)

alpha and the rate are measured once a process, by the first call that asks for "auto", with
all-reduces of PROBE_SMALL and PROBE_LARGE bytes; rank 0's figures are broadcast, so that every
rank cuts the same buckets (a plan that differed between ranks would pair different
all-reduces). Every rank must make that first call at the same point of its program, as it makes
every collective; shutdown() forgets the figures. With compression the buckets hold twice the
gradient bytes, so that what crosses the wire is the size planned."""
import time

import tensorflow as tf

from . import ops

OVERHEAD = 0.05
MIN_BYTES = 1 << 20
MAX_BYTES = 64 << 20
PROBE_SMALL = 4 << 10
PROBE_LARGE = 8 << 20

_measured = None  # (alpha seconds, bytes per second), once probed


def plan(alpha_seconds, bytes_per_second):
    """The bucket size for links of this alpha and rate (above)."""
    b = alpha_seconds * bytes_per_second * (1 - OVERHEAD) / OVERHEAD
    return int(min(max(b, MIN_BYTES), MAX_BYTES))


def _seconds(nbytes, reps, runs=3):
    """One all-reduce of nbytes as a step runs it: reps of them chained inside a tf.function
    (eager calls cost TensorFlow hundreds of microseconds each, which a traced step does not pay),
    the median of `runs` timed chains, each started after a small all-reduce has lined the ranks
    up (else a rank's chain also times its peers arriving late)."""
    @tf.function
    def chain(x):
        for _ in range(reps):
            x = ops.allreduce(x)
        return x[:1]
    t = tf.zeros([nbytes // 4], tf.float32)
    chain(t).numpy()  # traced, and the first op of a size may pick or connect
    times = []
    for _ in range(runs):
        ops.allreduce(tf.zeros([1], tf.float32)).numpy()
        start = time.perf_counter()
        chain(t).numpy()
        times.append((time.perf_counter() - start) / reps)
    return sorted(times)[len(times) // 2]


def measured():
    """(alpha seconds, bytes per second) of this job's all-reduce, rank 0's, probed once."""
    global _measured
    if _measured is None:
        with tf.init_scope():  # eager even while a tf.function is traced
            alpha = _seconds(PROBE_SMALL, 20)
            large = _seconds(PROBE_LARGE, 3)
            rate = PROBE_LARGE / max(large - alpha, 1e-9)
            agreed = ops.broadcast(tf.constant([alpha, rate], tf.float64), root=0).numpy()
        _measured = (float(agreed[0]), float(agreed[1]))
    return _measured


def auto_bucket_bytes():
    return plan(*measured())


def forget():
    """A later communicator (shutdown, then init) may have other links: probe again."""
    global _measured
    _measured = None
