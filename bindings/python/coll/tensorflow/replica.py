"""A replica API in TF-Replicator's manner, for jobs launched one process per replica (collrun,
torchrun, mpirun, srun):

    repl = ct.Replicator()
    def step(batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(model(batch))
        grads = repl.all_reduce(tape.gradient(loss, model.trainable_variables), op="avg")
        opt.apply(grads, model.trainable_variables)
        return repl.all_reduce(loss, op="avg")
    loss = repl.run(step, my_shard_of_the_batch)

run(step_fn, ...) runs the step on this replica (each process is one; a tf.function made once
and reused, so that the step is traced once); inside it, all_reduce, broadcast and all_gather
act across the replicas on any nest of tensors (a list of gradients goes through coll's
bucketing).
"""
import tensorflow as tf

from . import fusion, ops


class Replicator:
    def __init__(self, jit=True):
        ops.init()
        self._jit = jit
        self._steps = {}

    @property
    def num_replicas(self):
        return ops.size()

    @property
    def replica_id(self):
        return ops.rank()

    def run(self, step_fn, *args, **kwargs):
        """step_fn(*args, **kwargs) on this replica, traced as a tf.function (jit=True) once per step_fn."""
        if not self._jit:
            return step_fn(*args, **kwargs)
        fn = self._steps.get(step_fn)
        if fn is None:
            fn = self._steps[step_fn] = tf.function(step_fn)
        return fn(*args, **kwargs)

    def all_reduce(self, values, op="sum"):
        """Every tensor of the nest reduced over the replicas (sum, prod, min, max, avg)."""
        flat = tf.nest.flatten(values)
        if op in ("sum", "avg"):
            return tf.nest.pack_sequence_as(values, fusion.allreduce_many(flat, op=op))
        return tf.nest.pack_sequence_as(values, [ops.allreduce(t, op=op) for t in flat])

    def broadcast(self, values, root=0):
        return tf.nest.map_structure(lambda t: ops.broadcast(t, root=root), values)

    def all_gather(self, values):
        """Each tensor of the nest concatenated over the replicas along its first dimension."""
        return tf.nest.map_structure(ops.allgather, values)
