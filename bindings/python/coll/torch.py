"""The torch.distributed backend "coll".

    import torch.distributed as dist
    import coll.torch                      # registers the backend
    dist.init_process_group("coll")        # env:// (torchrun), or init_method="tcp://..."
    group = dist.new_group([0, 1], backend="coll")

Every collective runs on coll's own progress thread, so async_op=True handles (and the
futures DistributedDataParallel chains on them) overlap with the caller's work. CPU tensors,
and CUDA tensors where libcoll was built with CUDA and torch is 2.1 or later (ordered on
torch's current stream, as with nccl), of dtype float16/32/64, bfloat16, int8/32/64, uint8 and
bool. coll bootstraps through the store torch hands the backend; the group's timeout is each
op's deadline.

A torch extension runs only with the torch it was compiled against: importing this module
with another torch raises ImportError naming both versions (before anything is loaded that
could crash), and `python -m coll` says the same.
"""
import torch as _torch_pkg
import torch.distributed as _dist  # first: defines the Store and ProcessGroup types _torch uses

from . import _build_info

TORCH_VERSION = _torch_pkg.__version__
if not _build_info.torch:
    raise ImportError("coll was built without its torch backend (no torch was found in the environment it was built "
                      "for); install torch first, then reinstall coll: pip install --no-build-isolation "
                      "--force-reinstall --no-deps <coll source or sdist>")
if _build_info.torch != TORCH_VERSION:
    raise ImportError(f"coll.torch was built for torch {_build_info.torch}, but torch {TORCH_VERSION} is installed "
                      f"({_torch_pkg.__file__}): a torch extension runs only with the torch it was compiled against; "
                      "rebuild coll against this one: pip install --no-build-isolation --force-reinstall --no-deps "
                      "<coll source or sdist>")

from . import _torch  # noqa: E402  (after the version check: a mismatched module may not even load)

BACKEND_NAME = "coll"
# Whether this build takes CUDA tensors (libcoll built with CUDA; torch 2.1 or later is needed too).
HAS_CUDA = bool(_torch.has_cuda)


def _create_process_group(prefix_store, rank, world_size, timeout):
    return _torch.create_process_group(prefix_store, rank, world_size, timeout)


def _create_extended(dist_backend_opts, backend_options):
    """torch 2.x's extended creator: one object with the store, the rank in the group, its size
    and timeout (and the group's name and global ranks, which coll's store prefix covers)."""
    o = dist_backend_opts
    return _torch.create_process_group(o.store, o.group_rank, o.group_size, o.timeout)


def _register():
    import inspect
    if hasattr(_dist.Backend, BACKEND_NAME.upper()):
        return
    params = inspect.signature(_dist.Backend.register_backend).parameters
    if "extended_api" in params and "devices" in params:  # torch 2.x
        _dist.Backend.register_backend(BACKEND_NAME, _create_extended, extended_api=True, devices=["cpu", "cuda"])
    elif "devices" in params:
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group, devices=["cpu", "cuda"])
    else:  # torch 1.x
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)


_register()
