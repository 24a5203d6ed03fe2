"""coll: collective communication for distributed training.

The numpy API lives in the compiled coll._coll and is re-exported here (coll.init(),
coll.Communicator, coll.Work, coll.Error, coll.DataType, coll.ReduceOp). ``import coll.torch``
registers the torch.distributed backend "coll". ``python -m coll`` prints what this build holds.
"""
import sys as _sys

try:
    from ._coll import *  # noqa: F401,F403
    from ._coll import __doc__ as _native_doc, __version__  # noqa: F401
except ImportError as _e:
    # The usual causes, named: the module finds numpy at import ("initialization failed"
    # otherwise), and it was compiled for one Python's ABI.
    import importlib.util as _util
    if _util.find_spec("numpy") is None:
        raise ImportError(f"coll needs numpy, which this Python ({_sys.executable}) does not have: "
                          f"pip install numpy ({_e})") from _e
    raise ImportError(f"coll's compiled module does not load in this Python ({_sys.executable}, "
                      f"{_sys.version.split()[0]}): it was built for another one; build or pip install coll with this "
                      f"Python ({_e})") from _e

Error.__module__ = "coll"  # noqa: F405  (raised as coll.Error, as documented)
