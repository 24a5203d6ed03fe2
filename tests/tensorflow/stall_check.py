"""An op that only some ranks call, as a TensorFlow user makes one: rank 0 all-reduces while the
others never do. Rank 0's op must fail by its timeout (COLL_TIMEOUT) with the ledger's report
naming every rank that has not called it and what each last ran; the others stay alive (their
ledgers answer) and leave. Run under collrun with COLL_TIMEOUT of several seconds (every op has
it: the first all-reduce, too, must not time out while a loaded machine starts the ranks)."""
import os
import sys
import time

import tensorflow as tf
import coll.tensorflow as ct


def main():
    ct.init()
    r, n = ct.rank(), ct.size()
    ct.allreduce(tf.ones([2])).numpy()  # every rank: allreduce #0
    timeout = float(os.environ.get("COLL_TIMEOUT", "5"))
    if r != 0:
        time.sleep(timeout + 5)  # past rank 0's deadline, never calling allreduce #1
        print(f"rank {r}: stall_check: ok (never called it)", flush=True)
        os._exit(0)  # the communicator is broken (rank 0 gave up on it): nothing to shut down
    start = time.monotonic()
    try:
        ct.allreduce(tf.ones([3])).numpy()
    except tf.errors.OpError as e:
        msg, took = str(e), time.monotonic() - start
        others = [f"rank {k} has not called it" for k in range(1, n)]
        missing = [s for s in ["allreduce #1"] + others if s not in msg]
        if missing or took > timeout + 10:
            print(f"rank 0: stall_check: FAILED after {took:.1f} s, missing {missing} in: {msg}", flush=True)
            sys.exit(1)
        print(f"rank 0: stall_check: ok after {took:.1f} s: {msg.splitlines()[0][:300]}", flush=True)
        os._exit(0)
    print("rank 0: stall_check: FAILED: an all-reduce the other ranks never called completed", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
