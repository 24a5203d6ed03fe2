"""Prints what compiling coll's torch backend against this Python's torch takes, for CMake.

Run by cmake/python_torch.cmake as `python -I torch_build_flags.py`: -I leaves out PYTHONPATH,
through which pip's isolated build environment hides the environment being installed into, so
the torch found is the one `import torch` will load next to coll. One `key=value` per line
(lists joined with '|': CMake splits the lines on ';'); `found=0` and the reason where there is no usable torch.
"""
import sys


def main():
    try:
        import torch
        import torch.utils.cpp_extension as ext
    except Exception as e:  # not installed, or broken: the wheel carries the numpy API only
        print("found=0")
        print(f"why=torch cannot be imported by {sys.executable}: {type(e).__name__}: {e}".replace("\n", " "))
        return
    version = torch.__version__
    major, minor = (int(x) for x in version.split("+")[0].split(".")[:2])
    if major < 2:
        print("found=0")
        print(f"why=torch {version} is older than 2.0, which the pip build supports")
        return
    includes = ext.include_paths()
    pybind11 = [f'PYBIND11_{n}="{getattr(torch._C, "_PYBIND11_" + n)}"' for n in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")
                if getattr(torch._C, "_PYBIND11_" + n, None)]
    print("found=1")
    print(f"version={version}")
    print(f"cuda={torch.version.cuda or ''}")
    print(f"cxx11_abi={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
    print(f"includes={'|'.join(includes)}")
    print(f"library_dirs={'|'.join(ext.library_paths())}")
    print(f"pybind11_defines={'|'.join(pybind11)}")


if __name__ == "__main__":
    main()
