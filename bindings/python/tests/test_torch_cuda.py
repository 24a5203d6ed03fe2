"""torch.distributed with backend "coll" on CUDA tensors: every collective against a CPU
reference, stream ordering, point-to-point, refusals and DDP (torch_cuda_ranks.py), through
cuda_ipc and staged through host memory. Skipped, with the reason, where there is no GPU, where
torch is CPU-only or older than 2.1, or where libcoll was built without CUDA.

    PYTHONPATH=build/python python3 -m pytest -q bindings/python/tests/test_torch_cuda.py
"""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
coll_torch = pytest.importorskip("coll.torch", reason="coll built without the torch backend (libtorch-dev missing)")

if not coll_torch.HAS_CUDA:
    pytest.skip("libcoll was built without CUDA (nvcc not found at configure time)", allow_module_level=True)
if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 1):
    pytest.skip(f"torch {torch.__version__} cannot hand its CUDA streams to coll: CUDA tensors need torch 2.1 "
                "or later (Debian's python3-torch is 1.13 and CPU-only)", allow_module_level=True)
if not torch.cuda.is_available():
    pytest.skip("no GPU: torch.cuda.is_available() is False (CPU-only torch, or no device or driver)",
                allow_module_level=True)

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "torch_cuda_ranks.py"
sys.path.insert(0, str(HERE))
import torch_launch  # noqa: E402


def run_ranks(n, extra_env, timeout=300):
    text = torch_launch.run_ranks(SCRIPT, n, extra_env=extra_env, timeout=timeout)
    print(text)
    assert text.count("CUDA OK") == n, text


@pytest.mark.parametrize("path", ["cuda_ipc", "staged"])
@pytest.mark.parametrize("n", [2, 3])
def test_cuda_tensors(n, path):
    run_ranks(n, {"COLL_CUDA_IPC": "1" if path == "cuda_ipc" else "0", "COLL_DEBUG": "INFO"})
