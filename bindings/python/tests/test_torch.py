"""torch.distributed with backend "coll": every collective against a reference, DDP against
gloo, and a torchrun launch. Skipped when torch or coll.torch is missing.

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q bindings/python/tests/test_torch.py
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
SCRIPT = HERE / "torch_ranks.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(n, *args, timeout=240):
    """n processes with torchrun's variables (env:// rendezvous); all must exit 0."""
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, str(SCRIPT), *args], env=env, stdout=subprocess.PIPE,
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


@pytest.mark.parametrize("n", [2, 3])
def test_collectives(n):
    out = run_ranks(n, "collectives")
    assert out.count("collectives ok") == n, out


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_matches_gloo(n, tmp_path):
    for backend in ("coll", "gloo"):
        run_ranks(n, "ddp", backend, str(tmp_path))
    ref = torch.load(tmp_path / "gloo_0.pt")
    for r in range(n):
        got = torch.load(tmp_path / f"coll_{r}.pt")
        for k in ref:
            assert torch.allclose(got[k], ref[k], rtol=1e-5, atol=1e-6), f"rank {r} {k} differs from gloo"
        first = torch.load(tmp_path / "coll_0.pt")
        assert all(torch.equal(got[k], first[k]) for k in ref), f"rank {r} differs from rank 0"


def test_torchrun(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--redirects", "1", "--tee", "1",
           "--master_port", str(free_port()), str(SCRIPT), "ddp", "coll", str(tmp_path)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stdout
    assert (tmp_path / "coll_1.pt").exists(), proc.stdout
