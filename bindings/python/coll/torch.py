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
"""
import torch.distributed as _dist  # first: defines the Store and ProcessGroup types _torch uses

from . import _torch

BACKEND_NAME = "coll"
# Whether this build takes CUDA tensors (libcoll built with CUDA; torch 2.1 or later is needed too).
HAS_CUDA = bool(_torch.has_cuda)


def _create_process_group(prefix_store, rank, world_size, timeout):
    return _torch.create_process_group(prefix_store, rank, world_size, timeout)


def _register():
    import inspect
    if hasattr(_dist.Backend, BACKEND_NAME.upper()):
        return
    # torch 2.x asks which devices a backend takes; torch 1.x has no such argument.
    if "devices" in inspect.signature(_dist.Backend.register_backend).parameters:
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group, devices=["cpu", "cuda"])
    else:
        _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)


_register()
