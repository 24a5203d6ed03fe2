"""coll.tensorflow started by a launcher: the rank and size it reads, and one all-reduce.

    mpirun -n 2 python tests/tensorflow/launch_check.py      (or collrun, torchrun, srun)
Prints "rank R of N: launch ok (sum S)" on every rank."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import coll.tensorflow as ct  # noqa: E402

ct.init()
r, n = ct.rank(), ct.size()
total = int(ct.allreduce(tf.constant([r + 1], dtype=tf.int64)).numpy()[0])
assert total == n * (n + 1) // 2, total
print(f"rank {r} of {n}: launch ok (sum {total})", flush=True)
ct.shutdown()
