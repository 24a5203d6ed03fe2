"""torch.distributed with backend "coll": every collective against a reference, DDP against
gloo, and a torchrun launch. Skipped when torch or coll.torch is missing.

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q bindings/python/tests/test_torch.py
"""
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("coll.torch", reason="coll built without the torch backend (libtorch-dev missing)")

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import torch_launch  # noqa: E402
from torch_launch import free_port  # noqa: E402

SCRIPT = HERE / "torch_ranks.py"


def run_ranks(n, *args, timeout=240):
    """n processes of torch_ranks.py with torchrun's variables; all must exit 0."""
    return torch_launch.run_ranks(SCRIPT, n, args, timeout=timeout)


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
