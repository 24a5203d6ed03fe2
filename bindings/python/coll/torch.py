"""The torch.distributed backend "coll".

    import torch.distributed as dist
    import coll.torch                      # registers the backend
    dist.init_process_group("coll")        # env:// (torchrun), or init_method="tcp://..."
    group = dist.new_group([0, 1], backend="coll")

Every collective runs on coll's own progress thread, so async_op=True handles (and the
futures DistributedDataParallel chains on them) overlap with the caller's work. CPU tensors of
dtype float16/32/64, bfloat16, int8/32/64, uint8 and bool. coll bootstraps through the store
torch hands the backend; the group's timeout is each op's deadline.
"""
import torch.distributed as _dist  # first: defines the Store and ProcessGroup types _torch uses

from . import _torch

BACKEND_NAME = "coll"


def _create_process_group(prefix_store, rank, world_size, timeout):
    return _torch.create_process_group(prefix_store, rank, world_size, timeout)


if not hasattr(_dist.Backend, BACKEND_NAME.upper()):
    _dist.Backend.register_backend(BACKEND_NAME, _create_process_group)
