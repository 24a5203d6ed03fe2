"""coll's collectives for TensorFlow (CPU tensors): ops, Keras training, cross-replica batch norm.

    import tensorflow as tf, keras
    import coll.tensorflow as ct
    ct.init()                                   # collrun, torchrun, mpirun, srun: no TF_CONFIG
    g = ct.allreduce(tf.ones([4]), op="avg")   # also broadcast, allgather, reduce_scatter, alltoall
    opt = ct.DistributedOptimizer(keras.optimizers.Adam(1e-3))   # gradients averaged over ranks
    model.compile(optimizer=opt, loss=...)
    model.fit(x, y, callbacks=[ct.BroadcastGlobalVariablesCallback(0), ct.MetricAverageCallback()])

The ops (ops.py) are TensorFlow custom ops compiled against the TensorFlow this package was
installed with (coll/_tensorflow_ops.so), asynchronous in TensorFlow's executor, in eager mode
and inside tf.function, for float16, bfloat16, float32, float64, int32 and int64, with
gradients. Gradients go through coll's bucketing (fusion.py); DistributedOptimizer and
DistributedGradientTape (keras.py) average them; SyncBatchNormalization (sync_batch_norm.py)
normalises over the global batch; Replicator (replica.py) runs a step on every replica in
TF-Replicator's manner. docs/TENSORFLOW.md has the details.
"""
import tensorflow as _tf

from .. import _build_info

TENSORFLOW_VERSION = _tf.__version__
if not _build_info.tensorflow:
    raise ImportError("coll was built without coll.tensorflow (no TensorFlow was found in the environment it was "
                      "built for); install tensorflow first, then reinstall coll: pip install --no-build-isolation "
                      "--force-reinstall --no-deps <coll source or sdist>")
if _build_info.tensorflow != TENSORFLOW_VERSION:
    raise ImportError(f"coll.tensorflow was built for TensorFlow {_build_info.tensorflow}, but TensorFlow "
                      f"{TENSORFLOW_VERSION} is installed: its ops run only with the TensorFlow they were compiled "
                      "against; rebuild coll against this one: pip install --no-build-isolation --force-reinstall "
                      "--no-deps <coll source or sdist>")

from .ops import (REDUCE_OPS, allgather, allreduce, alltoall, broadcast, init, rank, reduce_scatter,  # noqa: E402
                  shutdown, size)
from .fusion import allreduce_many  # noqa: E402
from .keras import (BroadcastGlobalVariablesCallback, DistributedGradientTape, DistributedOptimizer,  # noqa: E402
                    MetricAverageCallback, broadcast_variables)
from .sync_batch_norm import SyncBatchNormalization  # noqa: E402
from .replica import Replicator  # noqa: E402

__all__ = ["TENSORFLOW_VERSION", "REDUCE_OPS", "init", "shutdown", "rank", "size", "allreduce", "broadcast",
           "allgather", "reduce_scatter", "alltoall", "allreduce_many", "DistributedOptimizer",
           "DistributedGradientTape", "BroadcastGlobalVariablesCallback", "MetricAverageCallback",
           "broadcast_variables", "SyncBatchNormalization", "Replicator"]
