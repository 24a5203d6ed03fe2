"""All-reduce of many tensors at once (gradients): laid end to end in buckets, one all-reduce per
bucket, as coll's trainer and torch's DDP do, so that a model of many small layers costs a few
collectives, not one per layer.

Buckets are cut from the end of the list the tensors are given in, which is the same on every
rank (a model's variables in their order), never in the order TensorFlow happens to compute
them: every rank issues the same collectives in the same order, so none waits for a bucket
another issues later. From the end, as torch's DDP does, because the backward pass computes the
last layers' gradients first: inside a `tf.function` each bucket's all-reduce depends only on
its own gradients, so the first one starts while the earlier layers' gradients are still being
computed (coll's ops are stateful, so TensorFlow runs them in program order: a bucket of the
first layers issued first would hold back every other).
A bucket holds tensors of one dtype, up to `bucket_bytes` (a tensor larger than that is a
bucket of its own; "auto": sized from this job's links, bucket_size.py). `compression` ("fp16" or "bf16") casts floating-point buckets down for the
wire and back after, halving the bytes sent (not exact: the sum is rounded to that precision).
"""
import numbers

import tensorflow as tf

from . import bucket_size, ops

DEFAULT_BUCKET_BYTES = 25 << 20  # as torch's DDP
COMPRESSIONS = {None: None, "none": None, "fp16": tf.float16, "bf16": tf.bfloat16}


def _buckets(tensors, bucket_bytes):
    """Lists of indices into `tensors`, from its end: consecutive runs of one dtype, each up to
    bucket_bytes."""
    out, current, current_bytes, current_dtype = [], [], 0, None
    for i in reversed(range(len(tensors))):
        t = tensors[i]
        nbytes = t.shape.num_elements() * t.dtype.size if t.shape.is_fully_defined() else bucket_bytes
        if current and (t.dtype != current_dtype or current_bytes + nbytes > bucket_bytes):
            out.append(current)
            current, current_bytes = [], 0
        current.append(i)
        current_bytes += nbytes
        current_dtype = t.dtype
    if current:
        out.append(current)
    return out


def check_bucket_bytes(bucket_bytes):
    if isinstance(bucket_bytes, str) and bucket_bytes == "auto":
        return
    if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, numbers.Integral) or bucket_bytes <= 0:
        raise ValueError(f"coll.tensorflow: bucket_bytes {bucket_bytes!r} is neither a positive int nor 'auto'")


def allreduce_many(tensors, op="avg", bucket_bytes=DEFAULT_BUCKET_BYTES, compression=None):
    """Every tensor of the list all-reduced with `op`, in buckets; None entries stay None and
    IndexedSlices (an embedding's sparse gradient) are made dense first."""
    if compression not in COMPRESSIONS:
        raise ValueError(f"coll.tensorflow: compression {compression!r} is not one of fp16, bf16, none")
    check_bucket_bytes(bucket_bytes)
    wire = COMPRESSIONS[compression]
    if ops.size() == 1:  # one rank: each gradient is already its own average, nothing to copy
        return [None if t is None else tf.convert_to_tensor(t) for t in tensors]
    if bucket_bytes == "auto":  # sized for the wire: buckets are cut in the gradients' own bytes
        bucket_bytes = bucket_size.auto_bucket_bytes() * (2 if wire is not None else 1)
    bucket_bytes = int(bucket_bytes)
    result = list(tensors)
    present = [i for i, t in enumerate(tensors) if t is not None]
    dense = [tf.convert_to_tensor(tensors[i]) for i in present]
    for bucket in _buckets(dense, bucket_bytes):
        parts = [dense[j] for j in bucket]
        flat = tf.concat([tf.reshape(p, [-1]) for p in parts], axis=0)  # one part: no copy
        down = wire is not None and flat.dtype.is_floating and flat.dtype != wire
        reduced = ops.allreduce(tf.cast(flat, wire) if down else flat, op=op)
        if down:
            reduced = tf.cast(reduced, flat.dtype)
        for j, piece, p in zip(bucket, tf.split(reduced, [tf.size(p) for p in parts]), parts):
            result[present[j]] = tf.reshape(piece, tf.shape(p))
    return result
