"""Keras 3 data-parallel training on coll.tensorflow against one process on the global batch:

    build/bin/collrun -n 4 python tests/tensorflow/keras_check.py [DIGITS_CSV_GZ]

The MLP of "Distributed TensorFlow with MPI" (MNIST-DNN's shape) on scikit-learn's digits
(Debian's python3-sklearn ships the CSV), global batches of 48 examples, each rank feeding its
share of every batch to model.fit with DistributedOptimizer, BroadcastGlobalVariablesCallback and
MetricAverageCallback. Every rank also trains the same model alone on the global batches (no
collectives) as the reference. For SGD and Adam, with and without SyncBatchNormalization (the
reference: BatchNormalization on the global batch), and once each through DistributedGradientTape
in a custom loop and Replicator.run: each weight ends within 1e-5 of the reference's largest magnitude, and every rank
holds the same bytes as rank 0.
"""
import gzip
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import coll.tensorflow as ct  # noqa: E402

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
GLOBAL_BATCH, EPOCHS, STEPS = 48, 2, 20


def digits(path):
    with gzip.open(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float32)
    return rows[:, :64] / 16.0, rows[:, 64].astype(np.int32)


def model(sync_bn, distributed):
    keras.utils.set_random_seed(7)  # the same start everywhere (the callback makes sure of it)
    bn = ct.SyncBatchNormalization if (sync_bn and distributed) else keras.layers.BatchNormalization
    if sync_bn:  # no bias before a batch norm: its gradient is zero but for rounding, which Adam would amplify
        layers = [keras.Input((64,)), keras.layers.Dense(48, use_bias=False), bn(), keras.layers.ReLU()]
    else:
        layers = [keras.Input((64,)), keras.layers.Dense(48, activation="relu")]
    layers += [keras.layers.Dense(24, activation="relu"), keras.layers.Dense(10)]
    return keras.Sequential(layers)


def optimizer(name):
    return keras.optimizers.SGD(0.1, momentum=0.5) if name == "sgd" else keras.optimizers.Adam(0.003)


def shard(x, y, r, n):
    """This rank's examples of every global batch, in order: batch k of size GLOBAL_BATCH / n."""
    idx = np.arange(STEPS * GLOBAL_BATCH).reshape(STEPS, GLOBAL_BATCH)[:, r::n].ravel()
    return x[idx], y[idx]


def compile_fit(m, opt, x, y, batch, callbacks=()):
    m.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    m.fit(x, y, batch_size=batch, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=list(callbacks))
    return [w.numpy() for w in m.weights]


def custom_loop(x, y, r, n):
    m = model(False, True)
    opt = keras.optimizers.SGD(0.1)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ct.broadcast_variables(m.weights, 0)

    @tf.function
    def step(xb, yb):
        with ct.DistributedGradientTape() as tape:
            loss = loss_fn(yb, m(xb, training=True))
        opt.apply(tape.gradient(loss, m.trainable_variables), m.trainable_variables)

    per = GLOBAL_BATCH // n
    for _ in range(EPOCHS):
        for k in range(STEPS):
            step(x[k * per:(k + 1) * per], y[k * per:(k + 1) * per])
    return [w.numpy() for w in m.weights]


def replicator_loop(x, y, n):
    """The same loop in TF-Replicator's manner: Replicator.run(step) with all_reduce inside."""
    repl = ct.Replicator()
    m = model(False, True)
    opt = keras.optimizers.SGD(0.1)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for v, root_value in zip(m.weights, repl.broadcast([tf.convert_to_tensor(w) for w in m.weights])):
        v.assign(root_value)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, m(xb, training=True))
        grads = repl.all_reduce(tape.gradient(loss, m.trainable_variables), op="avg")
        opt.apply(grads, m.trainable_variables)
        return repl.all_reduce(loss, op="avg")

    per = GLOBAL_BATCH // n
    for _ in range(EPOCHS):
        for k in range(STEPS):
            repl.run(step, x[k * per:(k + 1) * per], y[k * per:(k + 1) * per])
    assert repl.num_replicas == n
    return [w.numpy() for w in m.weights]


def reference_loop(x, y):
    m = model(False, False)
    opt = keras.optimizers.SGD(0.1)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for _ in range(EPOCHS):
        for k in range(STEPS):
            with tf.GradientTape() as tape:
                loss = loss_fn(y[k * GLOBAL_BATCH:(k + 1) * GLOBAL_BATCH], m(x[k * GLOBAL_BATCH:(k + 1) * GLOBAL_BATCH],
                                                                              training=True))
            opt.apply(tape.gradient(loss, m.trainable_variables), m.trainable_variables)
    return [w.numpy() for w in m.weights]


def compare(got, want, what):
    """The largest difference from one process's weights, as a fraction of each weight's largest
    magnitude (at most 1e-5), once every rank is checked to hold rank 0's weights bit for bit."""
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        scale = max(float(np.abs(w).max()), 1e-12)
        err = float(np.abs(g - w).max()) / scale
        if err > 1e-5:
            raise AssertionError(f"{what}: weight {i} {g.shape} is {err:.2e} of its largest magnitude from one "
                                 "process's")
        worst = max(worst, err)
    for i, g in enumerate(got):  # bit-identical across ranks
        root = ct.broadcast(tf.constant(g), root=0).numpy()
        if not np.array_equal(root.view(np.uint8), g.view(np.uint8)):
            raise AssertionError(f"{what}: weight {i} differs from rank 0's")
    return f"within {worst:.1e} of one process, ranks bit-identical"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DIGITS
    if not os.path.exists(path):
        print(f"keras_check: no digits data at {path} (apt-get install python3-sklearn): skipped")
        sys.exit(77)
    ct.init()
    r, n = ct.rank(), ct.size()
    assert GLOBAL_BATCH % n == 0, f"run with a number of ranks that divides {GLOBAL_BATCH}"
    x, y = digits(path)
    xs, ys = shard(x, y, r, n)
    xg, yg = x[:STEPS * GLOBAL_BATCH], y[:STEPS * GLOBAL_BATCH]
    for opt_name in ("sgd", "adam"):
        for sync_bn in (False, True):
            what = f"{opt_name}{' + SyncBatchNormalization' if sync_bn else ''}"
            want = compile_fit(model(sync_bn, False), optimizer(opt_name), xg, yg, GLOBAL_BATCH)
            buckets = "auto" if opt_name == "adam" else 25 << 20  # sized from the links, and DDP's size
            got = compile_fit(model(sync_bn, True), ct.DistributedOptimizer(optimizer(opt_name), bucket_bytes=buckets),
                              xs, ys, GLOBAL_BATCH // n,
                              [ct.BroadcastGlobalVariablesCallback(0), ct.MetricAverageCallback()])
            try:
                figure = compare(got, want, what)
            except AssertionError as e:
                print(f"rank {r}: {what}: FAILED: {e}", flush=True)
                sys.exit(1)
            print(f"rank {r}: model.fit, {what}, buckets {buckets}: ok ({figure})", flush=True)
    figure = compare(custom_loop(xs, ys, r, n), reference_loop(xg, yg), "DistributedGradientTape")
    print(f"rank {r}: custom loop, DistributedGradientTape: ok ({figure})", flush=True)
    figure = compare(replicator_loop(xs, ys, n), reference_loop(xg, yg), "Replicator.run")
    print(f"rank {r}: Replicator.run with all_reduce: ok ({figure})", flush=True)
    ct.shutdown()
    print(f"rank {r}: keras_check: ok ({n} ranks, Keras {keras.__version__})", flush=True)


if __name__ == "__main__":
    main()
