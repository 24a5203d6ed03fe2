"""The ops of coll.tensorflow (see its package docstring): coll/_tensorflow_ops.so loaded into
TensorFlow, its C entry points (init, rank, size) through ctypes, the Python wrappers, and the
ops' gradients:
of an all-reduce (sum, avg), the all-reduce of the gradient; of a broadcast, the gradient summed
to the root (zero elsewhere); of an all-gather, each rank's rows of the gradient summed over the
ranks (a reduce-scatter); of a reduce-scatter (sum, avg), the all-gather of the gradient.
"""
import ctypes
import os

import tensorflow as tf

_LIBRARY = os.path.join(os.path.dirname(os.path.dirname(__file__)), "_tensorflow_ops.so")
_ops = tf.load_op_library(_LIBRARY)
_c = ctypes.CDLL(_LIBRARY)  # the same library: init, rank and size through its C entry points
_c.coll_tf_init.argtypes = [ctypes.c_char_p, ctypes.c_int]

REDUCE_OPS = ("sum", "prod", "min", "max", "avg")


def init():
    """Connects this process to the job's others, from the launcher's environment (collrun,
    torchrun, Open MPI, MPICH, Slurm; MASTER_ADDR/MASTER_PORT by hand). Idempotent."""
    err = ctypes.create_string_buffer(1024)
    if _c.coll_tf_init(err, len(err)) != 0:
        raise RuntimeError(f"coll.tensorflow.init: {err.value.decode(errors='replace')}")


def shutdown():
    """Waits for the ops issued (each bounded by its deadline), then disconnects."""
    _c.coll_tf_shutdown()
    from . import bucket_size  # imports this module: not at the top
    bucket_size.forget()


def rank():
    return _c.coll_tf_rank()


def size():
    return _c.coll_tf_size()


def _check(name, op=None):
    if _c.coll_tf_size() < 0:
        raise RuntimeError(f"coll.tensorflow.{name}: call coll.tensorflow.init() first")
    if op is not None and op not in REDUCE_OPS:
        raise ValueError(f"coll.tensorflow.{name}: op {op!r} is not one of {', '.join(REDUCE_OPS)}")


def allreduce(tensor, op="sum", name=None):
    """Every rank's tensor reduced elementwise with `op` (sum, prod, min, max, avg)."""
    _check("allreduce", op)
    return _ops.coll_allreduce(tensor, reduce_op=op, name=name)


def broadcast(tensor, root=0, name=None):
    """The root rank's tensor, on every rank (each passes a tensor of the same shape)."""
    _check("broadcast")
    if not 0 <= root < size():
        raise ValueError(f"coll.tensorflow.broadcast: root {root} is not a rank of this job ({size()} ranks)")
    return _ops.coll_broadcast(tensor, root=root, name=name)


def allgather(tensor, name=None):
    """Every rank's tensor concatenated along the first dimension, in rank order."""
    _check("allgather")
    return _ops.coll_allgather(tensor, name=name)


def reduce_scatter(tensor, op="sum", name=None):
    """The tensors reduced with `op`; rank r keeps the r-th of size() blocks of the first dimension."""
    _check("reduce_scatter", op)
    return _ops.coll_reduce_scatter(tensor, reduce_op=op, name=name)


def alltoall(tensor, name=None):
    """Block p of the first dimension goes to rank p; block p of the result came from rank p."""
    _check("alltoall")
    return _ops.coll_alltoall(tensor, name=name)


@tf.RegisterGradient("CollAllreduce")
def _allreduce_grad(op, grad):
    reduce_op = op.get_attr("reduce_op").decode()
    if reduce_op not in ("sum", "avg"):
        raise NotImplementedError(f"coll.tensorflow: no gradient for an all-reduce with op {reduce_op!r} (sum, avg)")
    return _ops.coll_allreduce(grad, reduce_op=reduce_op)


@tf.RegisterGradient("CollBroadcast")
def _broadcast_grad(op, grad):
    summed = _ops.coll_allreduce(grad, reduce_op="sum")
    return summed if rank() == op.get_attr("root") else tf.zeros_like(grad)


@tf.RegisterGradient("CollAllgather")
def _allgather_grad(op, grad):
    # This rank's rows of the gradient, summed over the ranks: each rank's row count is needed
    # again, so it travels with the gradient (the gather of the first dimensions).
    rows = _ops.coll_allgather(tf.shape(op.inputs[0], out_type=tf.int64)[:1])
    summed = _ops.coll_allreduce(grad, reduce_op="sum")
    start = tf.reduce_sum(rows[:rank()])
    return summed[start:start + rows[rank()]]


@tf.RegisterGradient("CollReduceScatter")
def _reduce_scatter_grad(op, grad):
    if op.get_attr("reduce_op").decode() == "avg":
        return _ops.coll_allgather(grad) / tf.cast(size(), grad.dtype)
    if op.get_attr("reduce_op").decode() != "sum":
        raise NotImplementedError("coll.tensorflow: no gradient for a reduce-scatter other than sum or avg")
    return _ops.coll_allgather(grad)
