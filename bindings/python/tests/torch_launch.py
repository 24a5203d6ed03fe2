"""Starts the ranks of a torch test script on this host, with torchrun's variables (env://
rendezvous on a free port), and checks that every rank exits 0. Shared by test_torch.py and
test_torch_cuda.py."""
import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(script, n, args=(), extra_env=None, timeout=240):
    """n processes of `script args`; returns their joined output, or fails naming the exit codes."""
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", **(extra_env or {}))
        procs.append(subprocess.Popen([sys.executable, str(script), *args], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    text = "\n".join(outputs)
    assert all(p.returncode == 0 for p in procs), f"{[p.returncode for p in procs]}:\n{text}"
    return text
