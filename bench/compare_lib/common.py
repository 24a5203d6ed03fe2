"""What every part of bench/compare.py (and bench/scripts/, which use its launching) shares:
paths, systems, collectives, sizes."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
NETCLUSTER = Path(os.environ.get("NETCLUSTER", ROOT.parent / "shared/tools/netcluster"))
NC_PREFIX, NC_SUBNET = "ncb", "10.214.19"  # compare.py's own cluster by default (--prefix, --subnet)
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's torch 1.13, with coll from BUILD/python

COLLECTIVES = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]
# coll-mem: coll with its buffers from collMemAlloc (perf programs' -R 1), on one host only.
SYSTEMS = ["coll", "coll-mem", "openmpi", "mpich", "gloo"]
# On request only (--systems), not in --all's tables: coll-ucx, coll over its ucx transport
# (against coll's own shm and socket transports); torch-coll, torch.distributed with coll's
# backend (beside gloo, what a torch user gets).
EXTRA_SYSTEMS = ["coll-ucx", "torch-coll"]
ALL_SYSTEMS = SYSTEMS + EXTRA_SYSTEMS
COLL_SYSTEMS = ("coll", "coll-mem", "coll-ucx", "torch-coll")  # not peers: the best peer is the best of the others
COLORS = {"coll": "tab:red", "coll-mem": "tab:purple", "openmpi": "tab:blue", "mpich": "tab:green",
          "gloo": "tab:orange", "coll-ucx": "tab:brown", "torch-coll": "tab:pink"}
MPI_OP = {"all_reduce": "allreduce", "broadcast": "broadcast", "all_gather": "allgather",
          "reduce_scatter": "reduce_scatter"}
LOCAL_SIZES = [8, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
NET_SIZES = LOCAL_SIZES


def bus_factor(collective, n):
    """nccl-tests' busbw / algbw: the bytes each rank's link carries per byte of the buffer."""
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    return 1.0 if collective == "broadcast" else (n - 1) / n


def effective_size(collective, size, n):
    """All-gather and reduce-scatter need at least one float per rank; sizes round down to
    whole per-rank chunks, as nccl-tests' do."""
    if collective in ("all_gather", "reduce_scatter"):
        per_rank = max(1, size // 4 // n)
        return per_rank * n * 4
    return max(4, size // 4 * 4)


def run_cmd(cmd, timeout, env=None):
    """(rc, stdout+stderr) of cmd; rc 124 after timeout (its process group killed)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env, start_new_session=True)
        return p.returncode, p.stdout
    except FileNotFoundError as e:
        return 127, f"# {e}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out + f"\n# timed out after {timeout} s"


def torch_env(torch_python, build, backend):
    """The environment a torch rank needs: coll from BUILD/python under Debian's Python; a
    venv's python finds the coll pip installed there (and gloo needs nothing)."""
    if backend != "coll" or torch_python != DEBIAN_PYTHON:
        return {}
    return {"PYTHONPATH": str(Path(build) / "python")}


def torch_has_coll(torch_python, build):
    """Whether backend coll can run under torch_python (see torch_env)."""
    if torch_python == DEBIAN_PYTHON:
        return (Path(build) / "python/coll/torch.py").exists()
    return subprocess.run([torch_python, "-c", "import coll.torch"], capture_output=True, timeout=120).returncode == 0


def torch_version(torch_python):
    r = subprocess.run([torch_python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                       timeout=120)
    return r.stdout.strip() or "?"


def number_after(text, key):
    """The number after `key ` in a rank's output ("step_ms 1220.1"), or None."""
    m = re.search(rf"\b{key} ([0-9.]+)", text)
    return float(m[1]) if m else None


def write_mode_table(out, name, lines, errors):
    """A mode's table (--ddp, --tf) to OUT/NAME.txt with its errors' first lines, and each
    error whole to OUT/NAME.errors.txt; returns the table."""
    lines = lines + ["# error: " + e.splitlines()[0] for e in errors]
    text = "\n".join(lines) + "\n"
    (out / f"{name}.txt").write_text(text)
    if errors:
        (out / f"{name}.errors.txt").write_text("\n\n".join(errors) + "\n")
    return text
