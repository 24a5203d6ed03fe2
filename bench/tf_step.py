"""A Keras training step, data-parallel, under coll.tensorflow or TensorFlow's own
MultiWorkerMirroredStrategy (its ring all-reduce over gRPC): the step time a TensorFlow user
sees, and the forward pass, for the step's bound.

    RANK=r WORLD_SIZE=n MASTER_ADDR=h MASTER_PORT=p python bench/tf_step.py --mode coll
    ... --mode mwms --workers h0:p0,h1:p1,...    (TF_CONFIG is made from these and RANK)

The model is MNIST-DNN's shape (64 inputs, two hidden layers of --width, 10 classes; 4096:
17.1 M parameters, 68 MB of float32 gradients), so that at a small batch the step is bound by
the all-reduce. Both modes train on the same global batch (--batch per rank),
SGD, the same data, the same custom loop (a tf.function step; model.fit fails under
MultiWorkerMirroredStrategy in Keras 3.15); rank 0 prints "step_ms X forward_ms Y params Z" (medians of --steps steps
after --warmup).

--mode coll-parts takes coll's step apart: the step DistributedOptimizer(SGD) makes, with
clocks inside the tf.function between its three parts: the gradients (forward and backward),
their all-reduce, the update (held until every all-reduce has ended, so that each part is timed
alone: in the plain step the first buckets' updates may overlap the last bucket's all-reduce). Rank 0 prints "backward_ms A allreduce_ms B update_ms C
parts_step_ms S big_ready_ms R": the slowest rank's gradients and update, the all-reduce of
the rank that waited least for the others, the slowest rank's step, and when the slowest rank's
largest gradient existed (medians). Also "largest_bytes L
early_bytes E": the largest variable (its gradient is one tensor, which the backward pass
makes whole: its all-reduce cannot start before, nor its update end before the all-reduce) and
the variables whose gradients the backward pass makes before it (the layers after it), which
could cross the wire while it is computed.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["coll", "mwms", "coll-parts"], required=True)
    p.add_argument("--workers", help="mwms: host:port of every rank, in rank order")
    p.add_argument("--batch", type=int, default=2, help="examples per rank per step")
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--bucket-bytes", default=str(25 << 20), help="coll: DistributedOptimizer's (an int, or auto)")
    return p.parse_args()


def build(width):
    import keras
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(width, activation="relu"),
                             keras.layers.Dense(width, activation="relu"), keras.layers.Dense(10)])


def data(n, batch, steps):
    """The global batches, the same on every rank (each then takes its share)."""
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.random((steps * batch * n, 64), dtype=np.float32)
    y = rng.integers(0, 10, steps * batch * n).astype(np.int32)
    return x, y


def forward_ms(model, x):
    import tensorflow as tf
    f = tf.function(lambda t: model(t, training=True))
    f(x)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        f(x).numpy()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def coll_parts(args, model, per_example, x, y, rank, n):
    """--mode coll-parts (see above)."""
    import keras
    import tensorflow as tf
    import coll.tensorflow as ct
    from coll.tensorflow import fusion

    opt = keras.optimizers.SGD(0.01)  # what DistributedOptimizer(SGD) does, with clocks between
    variables = model.trainable_variables
    sizes = [int(v.numpy().nbytes) for v in variables]
    largest = max(range(len(sizes)), key=sizes.__getitem__)
    buckets = args.bucket_bytes if args.bucket_bytes == "auto" else int(args.bucket_bytes)

    @tf.function
    def train_step(xb, yb):
        t0 = tf.timestamp()
        with tf.control_dependencies([t0]):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(per_example(yb, model(xb, training=True)))
            grads = tape.gradient(loss, variables)
        with tf.control_dependencies([grads[largest]]):
            t_big = tf.timestamp()  # the largest variable's gradient exists (the backward pass goes on)
        with tf.control_dependencies(grads):
            t1 = tf.timestamp()  # every gradient exists
        averaged = fusion.allreduce_many(list(grads), op="avg", bucket_bytes=buckets)
        with tf.control_dependencies(averaged):
            t2 = tf.timestamp()  # every all-reduce has ended
        with tf.control_dependencies([t2]):  # else the first buckets' updates overlap the last all-reduce
            averaged = [tf.identity(g) for g in averaged]
        opt.apply(averaged, variables)
        with tf.control_dependencies([tf.reduce_sum(v[:1]) for v in variables]):  # read after the update
            t3 = tf.timestamp()
        return tf.stack([t1 - t0, t2 - t1, t3 - t2, t_big - t0]) * 1e3

    mine = x.reshape(-1, n, args.batch, 64)[:, rank]
    labels = y.reshape(-1, n, args.batch)[:, rank]
    parts, steps = [], []
    for k in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        parts.append(train_step(mine[k], labels[k]).numpy())
        steps.append((time.perf_counter() - t0) * 1e3)
    med = [statistics.median(p[i] for p in parts[args.warmup:]) for i in range(4)]
    # The slowest rank's gradients, update and largest gradient; the all-reduce of the rank that
    # waited least.
    got = ct.allreduce(tf.constant([med[0], -med[1], med[2], statistics.median(steps[args.warmup:]), med[3]],
                                   tf.float64), op="max").numpy()
    if rank == 0:
        print(f"mode coll-parts ranks {n} batch {args.batch} backward_ms {got[0]:.1f} allreduce_ms {-got[1]:.1f} "
              f"update_ms {got[2]:.1f} parts_step_ms {got[3]:.1f} big_ready_ms {got[4]:.1f} "
              f"largest_bytes {sizes[largest]} early_bytes {sum(sizes[largest + 1:])} params {model.count_params()}",
              flush=True)


def auto_buckets():
    """What bucket_bytes="auto" measured and cut: rank 0 alone calls this, which is safe only
    because the step's first apply has probed (a collective every rank made) and cached it."""
    from coll.tensorflow import bucket_size
    alpha, rate = bucket_size.measured()
    return f" (alpha {alpha * 1e6:.0f} us, {rate / 1e6:.1f} MB/s: {bucket_size.plan(alpha, rate)} bytes)"


def main():
    args = parse()
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if args.mode == "mwms":
        workers = args.workers.split(",")
        os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}})
    import keras
    import tensorflow as tf
    steps = args.warmup + args.steps + 1
    x, y = data(n, args.batch, steps)
    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    global_batch = args.batch * n
    if args.mode == "coll-parts":
        import coll.tensorflow as ct
        ct.init()
        return coll_parts(args, build(args.width), per_example, x, y, rank, n)
    if args.mode == "coll":
        import coll.tensorflow as ct
        ct.init()
        model = build(args.width)
        buckets = args.bucket_bytes if args.bucket_bytes == "auto" else int(args.bucket_bytes)
        opt = ct.DistributedOptimizer(keras.optimizers.SGD(0.01), bucket_bytes=buckets)  # averaged over the ranks

        @tf.function
        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(per_example(yb, model(xb, training=True)))
            opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            return loss
        mine = x.reshape(steps, n, args.batch, 64)[:, rank]
        labels = y.reshape(steps, n, args.batch)[:, rank]
        batches = [(mine[k], labels[k]) for k in range(steps)]
        run = lambda b: train_step(*b)  # noqa: E731
    else:
        comm = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
        with strategy.scope():
            model = build(args.width)
            opt = keras.optimizers.SGD(0.01)  # under the strategy Keras sums the gradients over replicas

        @tf.function
        def train_step(batch):
            def replica_step(xb, yb):
                with tf.GradientTape() as tape:
                    loss = tf.nn.compute_average_loss(per_example(yb, model(xb, training=True)),
                                                      global_batch_size=global_batch)
                opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
                return loss
            losses = strategy.run(replica_step, args=batch)
            return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        batches = list(strategy.experimental_distribute_dataset(ds.with_options(options)))
        run = train_step
    times = []
    for b in batches:
        t0 = time.perf_counter()
        run(b).numpy()
        times.append((time.perf_counter() - t0) * 1e3)
    step = statistics.median(times[args.warmup:])
    fwd = forward_ms(model, x[:args.batch])
    if rank == 0:
        print(f"mode {args.mode} ranks {n} batch {args.batch} step_ms {step:.1f} forward_ms {fwd:.1f} "
              f"params {model.count_params()}" + (f" buckets {args.bucket_bytes}" if args.mode == "coll" else "") +
              (auto_buckets() if args.mode == "coll" and args.bucket_bytes == "auto" else ""), flush=True)


if __name__ == "__main__":
    sys.exit(main())
