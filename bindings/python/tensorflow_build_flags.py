"""Prints what compiling coll's TensorFlow ops against this Python's TensorFlow takes, for CMake.

Run by cmake/python_wheel_tensorflow.cmake as `python -I tensorflow_build_flags.py` (as
torch_build_flags.py is, and for the same reason: the TensorFlow found is the one `import
tensorflow` will load next to coll). One `key=value` per line, lists joined with '|';
`found=0` and the reason where there is no usable TensorFlow.
"""
import os
import sys


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # its start-up banner is not output
    try:
        import tensorflow as tf
    except Exception as e:  # not installed, or broken: the wheel has no coll.tensorflow
        print("found=0")
        print(f"why=tensorflow cannot be imported by {sys.executable}: {type(e).__name__}: {e}".replace("\n", " "))
        return
    compile_flags = tf.sysconfig.get_compile_flags()
    link_flags = tf.sysconfig.get_link_flags()
    includes = [f[2:] for f in compile_flags if f.startswith("-I")]
    defines = [f[2:] for f in compile_flags if f.startswith("-D")]
    library_dirs = [f[2:] for f in link_flags if f.startswith("-L")]
    libraries = [f[2:] for f in link_flags if f.startswith("-l")]
    print("found=1")
    print(f"version={tf.__version__}")
    print(f"includes={'|'.join(includes)}")
    print(f"defines={'|'.join(defines)}")
    print(f"library_dirs={'|'.join(library_dirs)}")
    print(f"libraries={'|'.join(libraries)}")


if __name__ == "__main__":
    main()
