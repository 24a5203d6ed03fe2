"""coll: collective communication for distributed training.

The numpy API lives in the compiled coll._coll and is re-exported here (coll.init(),
coll.Communicator, coll.Work, coll.Error, coll.DataType, coll.ReduceOp). ``import coll.torch``
registers the torch.distributed backend "coll".
"""
from ._coll import *  # noqa: F401,F403
from ._coll import __doc__ as _native_doc, __version__  # noqa: F401

Error.__module__ = "coll"  # noqa: F405  (raised as coll.Error, as documented)
