"""`python -m coll`: this installation of coll, the torch and TensorFlow it was built for, and what it found.

Exits non-zero where the installation cannot work as built (coll.torch compiled for another
torch than the one installed), so that it also serves as a check after `pip install`.
"""
import importlib.util
import sys


def main():
    from . import _build_info as info
    print(f"coll {info.version} ({__package__} at {__file__.rsplit('/', 1)[0]})")
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    print(f"transports compiled in: {', '.join(info.transports)}")
    print(f"optional parts found at build time: {', '.join(info.optional) or 'none'}")
    print(f"CUDA device buffers: {'yes' if info.cuda else 'no'}")
    ok = True
    try:
        import numpy
        from . import _coll  # noqa: F401
        print(f"numpy API: ok (numpy {numpy.__version__})")
    except ImportError as e:
        ok = False
        print(f"numpy API: unavailable: {e}")
    if not info.torch:
        print("coll.torch: not built (no torch in the environment it was installed into)")
    elif importlib.util.find_spec("torch") is None:
        print(f"coll.torch: built for torch {info.torch}, but torch is not installed here")
    else:
        try:
            import coll.torch as ct
            print(f"coll.torch: ok, backend '{ct.BACKEND_NAME}' for torch {ct.TORCH_VERSION}"
                  f"{', CUDA tensors' if ct.HAS_CUDA else ''}")
        except ImportError as e:
            ok = False
            print(f"coll.torch: {e}")
    tensorflow = getattr(info, "tensorflow", "")
    if not tensorflow:
        print("coll.tensorflow: not built (no TensorFlow in the environment it was installed into)")
    elif importlib.util.find_spec("tensorflow") is None:
        print(f"coll.tensorflow: built for TensorFlow {tensorflow}, but TensorFlow is not installed here")
    else:
        try:
            import coll.tensorflow as ctf
            print(f"coll.tensorflow: ok, ops for TensorFlow {ctf.TENSORFLOW_VERSION}")
        except ImportError as e:
            ok = False
            print(f"coll.tensorflow: {e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
