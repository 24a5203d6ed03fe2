"""Data-parallel Keras 3 training on coll: the gradients of every step averaged over the ranks
(DistributedOptimizer for model.fit, DistributedGradientTape for a custom loop), the initial
variables and optimizer state taken from one rank (BroadcastGlobalVariablesCallback,
broadcast_variables), and the metrics of an epoch averaged (MetricAverageCallback).

Each rank feeds its own shard of the global batch; with the gradients averaged and the start
the same everywhere, every rank takes the same step, the one a single process would take on the
global batch, and the ranks' weights stay bit-identical (coll's all-reduce gives every rank the
same bytes).
"""
import keras
import tensorflow as tf

from . import fusion, ops


def broadcast_variables(variables, root=0):
    """Assigns every variable the root rank's value (in the order given, the same on every rank)."""
    for v in variables:
        v.assign(ops.broadcast(tf.convert_to_tensor(v), root=root))


class _DistributedApply:
    """What DistributedOptimizer adds to a Keras optimizer class: its apply() (which
    apply_gradients and model.fit call) averages the gradients over the ranks first."""

    def apply(self, grads, trainable_variables=None):
        grads = fusion.allreduce_many(list(grads), op=self._coll_op, bucket_bytes=self._coll_bucket_bytes,
                                      compression=self._coll_compression)
        return super().apply(grads, trainable_variables)


def _check_options(who, op, compression, bucket_bytes):
    """Refused when the wrapper is made, not at the first step's tracing."""
    if op not in ("avg", "sum"):
        raise ValueError(f"coll.tensorflow.{who}: op {op!r} is not avg or sum")
    if compression not in fusion.COMPRESSIONS:
        raise ValueError(f"coll.tensorflow.{who}: compression {compression!r} is not fp16, bf16 or none")
    fusion.check_bucket_bytes(bucket_bytes)


def DistributedOptimizer(optimizer, op="avg", compression=None, bucket_bytes=fusion.DEFAULT_BUCKET_BYTES):
    """`optimizer` (any Keras 3 optimizer) with its gradients all-reduced (`op`: avg, or sum) over
    the ranks, in buckets, before each update; compression "fp16" or "bf16" halves the bytes sent;
    bucket_bytes "auto" sizes the buckets from this job's links (bucket_size.py).
    The result is an instance of a subclass of the optimizer's own class, made from its config."""
    _check_options("DistributedOptimizer", op, compression, bucket_bytes)
    base = type(optimizer)
    cls = type(f"Distributed{base.__name__}", (_DistributedApply, base), {})
    wrapped = cls.from_config(optimizer.get_config())
    wrapped._coll_op, wrapped._coll_compression, wrapped._coll_bucket_bytes = op, compression, bucket_bytes
    return wrapped


class DistributedGradientTape(tf.GradientTape):
    """A tf.GradientTape whose gradient() returns the gradients averaged (`op`) over the ranks:

        with ct.DistributedGradientTape() as tape:
            loss = loss_fn(model(x), y)
        grads = tape.gradient(loss, model.trainable_variables)
    """

    def __init__(self, persistent=False, watch_accessed_variables=True, op="avg", compression=None,
                 bucket_bytes=fusion.DEFAULT_BUCKET_BYTES):
        _check_options("DistributedGradientTape", op, compression, bucket_bytes)
        super().__init__(persistent=persistent, watch_accessed_variables=watch_accessed_variables)
        self._coll = dict(op=op, compression=compression, bucket_bytes=bucket_bytes)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=tf.UnconnectedGradients.NONE):
        grads = super().gradient(target, sources, output_gradients, unconnected_gradients)
        flat = tf.nest.flatten(grads)
        return tf.nest.pack_sequence_as(grads, fusion.allreduce_many(flat, **self._coll))


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """At the start of training every rank takes the root's model weights; after the first batch
    (when the optimizer has made its variables) the root's optimizer state too, so that a job
    resumed from rank 0's checkpoint starts the same everywhere."""

    def __init__(self, root=0):
        super().__init__()
        self.root = root
        self._optimizer_done = False

    def on_train_begin(self, logs=None):
        broadcast_variables(self.model.weights, self.root)

    def on_train_batch_end(self, batch, logs=None):
        if self._optimizer_done:
            return
        self._optimizer_done = True
        broadcast_variables(self.model.optimizer.variables, self.root)


class MetricAverageCallback(keras.callbacks.Callback):
    """At each epoch's end, every metric in the logs becomes its average over the ranks (each
    rank measured its own shard), so that every rank logs and checkpoints on the same numbers."""

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(k for k, v in logs.items() if isinstance(v, (int, float)) or hasattr(v, "numpy"))
        if not names:
            return
        values = tf.constant([float(logs[k]) for k in names], dtype=tf.float64)
        for k, v in zip(names, ops.allreduce(values, op="avg").numpy()):
            logs[k] = float(v)
