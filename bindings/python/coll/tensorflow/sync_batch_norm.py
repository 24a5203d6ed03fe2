"""SyncBatchNormalization: Keras 3's BatchNormalization with its training-time statistics taken
over the global batch (every rank's examples), as TF-Replicator's cross-replica batch norm and
torch's SyncBatchNorm do, so that N ranks of B examples normalise as one process of N*B would.

Two all-reduces of a few numbers per channel: the sums and counts (the mean), then the sums of
squared deviations from that mean (the variance, computed as Keras computes it, not as
E[x^2] - E[x]^2, which loses precision). Both are sums, whose gradient is the all-reduce of the
gradient, so the backward pass is that of the global batch too. Inference (and a layer that is
not training) uses the moving statistics, as BatchNormalization does.
"""
import keras
import tensorflow as tf

from . import ops


@keras.saving.register_keras_serializable(package="coll")
class SyncBatchNormalization(keras.layers.BatchNormalization):
    def _moments(self, inputs, mask):
        x = tf.convert_to_tensor(inputs)
        axis = self.axis % len(x.shape)
        axes = [i for i in range(len(x.shape)) if i != axis]
        if mask is None:
            weights = tf.ones_like(x)
        else:  # the mask has one dimension less: the channels share it
            weights = tf.broadcast_to(tf.expand_dims(tf.cast(mask, x.dtype), -1), tf.shape(x))
        channels = x.shape[axis]
        first = ops.allreduce(tf.concat([tf.reduce_sum(x * weights, axes), tf.reduce_sum(weights, axes)], 0))
        count = tf.maximum(first[channels:], 1.0)
        mean = first[:channels] / count
        shape = [1] * len(x.shape)
        shape[axis] = channels
        deviation = (x - tf.reshape(mean, shape)) * weights
        variance = ops.allreduce(tf.reduce_sum(deviation * deviation, axes)) / count
        return mean, variance
