"""torchrun's elastic agent with backend "coll": the c10d rendezvous, a worker killed mid-training,
the whole group restarted (--max_restarts 1), coll re-initialised, training resumed from the
checkpoint; the final parameters equal a single-process run of the same global batches.
Skipped when torch or coll.torch is missing.

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q bindings/python/tests/test_torch_elastic.py
"""
import os
import pathlib
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("coll.torch", reason="coll built without the torch backend (libtorch-dev missing)")

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "elastic_train.py"
sys.path.insert(0, str(HERE))
import elastic_train  # noqa: E402  what the ranks ran, and the check of their results

WORLD, STEPS, KILL_STEP, KILL_RANK = 2, 6, 3, 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_restart_after_a_killed_worker(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(WORLD),
           "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{free_port()}", "--max_restarts", "1",
           "--monitor_interval", "1", "--redirects", "1", "--tee", "1",
           str(SCRIPT), str(tmp_path), str(STEPS), str(KILL_STEP), str(KILL_RANK)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    out = proc.stdout
    assert proc.returncode == 0, out
    assert f"elastic rank {KILL_RANK} kills itself before step {KILL_STEP}" in out, out
    problems = elastic_train.check(str(tmp_path), WORLD, STEPS, KILL_STEP)
    assert not problems, "\n".join(problems) + "\n" + out
    for r in range(WORLD):  # one host: its agent restarted the group once, so each worker says 1
        assert torch.load(tmp_path / f"final_{r}.pt")["restarts"] == 1, out
