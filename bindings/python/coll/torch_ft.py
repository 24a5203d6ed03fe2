"""coll under torchft: training that goes on when a replica dies.

torchft (pip install torchft) runs one quorum per step through its lighthouse: replicas that
died drop out, new ones join and take the parameters and optimizer state from a healthy peer,
and the process group of the replicas is made again for each new membership. That group must
be reconfigurable: ProcessGroupColl is one, as torchft's ProcessGroupGloo is, with coll's
communicator underneath (made through the quorum's store, like any coll.torch group).

    import torchft
    from coll.torch_ft import ProcessGroupColl

    manager = torchft.Manager(pg=ProcessGroupColl(timeout=timedelta(seconds=10)),
                              min_replica_size=2, load_state_dict=..., state_dict=..., ...)
    model = torchft.DistributedDataParallel(manager, model)
    optimizer = torchft.OptimizerWrapper(manager, torch.optim.SGD(model.parameters(), lr=0.1))

An op that fails because a replica died (PeerLost, or Timeout for one that stopped) fails the
step: torchft's Manager discards it (should_commit is false everywhere), aborts this group
(coll's abort: every pending op fails at once, nothing waits for the dead) and configures a new
one at the next quorum. tests/torch2/torchft_check.py kills a replica mid-training and starts a
replacement, with this group and with torchft's gloo one (docs/FAULT_TOLERANCE.md has figures).
"""
from datetime import timedelta

import torch
from torch.distributed import ProcessGroup as _BaseProcessGroup

try:
    from torchft.process_group import ProcessGroupWrapper as _ProcessGroupWrapper
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"coll.torch_ft needs torchft (pip install torchft): {e}") from e

from . import torch as _coll_torch  # checks the torch version, registers the backend


class ProcessGroupColl(_ProcessGroupWrapper):
    """A torchft process group on coll: made again, through the quorum's store, for every new
    membership. timeout: every op's deadline (COLL_TIMEOUT's role), and the store's."""

    def __init__(self, timeout: timedelta = timedelta(seconds=60)) -> None:
        super().__init__(timeout=timeout)

    def _create_pg(self, store, rank: int, world_size: int) -> _BaseProcessGroup:
        pg = _BaseProcessGroup(store, rank, world_size)
        backend = _coll_torch._torch.create_process_group(store, rank, world_size, self._timeout)
        kind = _BaseProcessGroup.BackendType.CUSTOM
        pg._set_default_backend(kind)
        pg._register_backend(torch.device("cpu"), kind, backend)
        if torch.cuda.is_available() and _coll_torch.HAS_CUDA:
            pg._register_backend(torch.device("cuda"), kind, backend)
        return pg

    def getBackendName(self) -> str:
        return "torchft-coll"
