#!/usr/bin/env python3
"""Builds the `coll` Python package against the Python (and torch) that runs this script.

CMake builds the package for /usr/bin/python3 and Debian's torch. A torch installed with pip
(or conda, or in a virtual environment) needs the extensions compiled against its own headers,
its C++ ABI and the pybind11 it was built with, or its Store and ProcessGroup/Backend objects
cannot cross into coll's module. This script does that from an existing libcoll:

    cmake -S . -B build && cmake --build build --target coll
    python3 bindings/python/build_for_python.py --lib build/lib --out build/pip-python
    PYTHONPATH=build/pip-python python3 -c "import coll.torch"

It writes OUT/coll/ with __init__.py, torch.py, torch_ft.py, _coll (numpy API) and, when this Python has
torch, _torch (the torch.distributed backend "coll"). CUDA tensors are taken when libcoll was
built with CUDA (detected from the library; --cuda on|off overrides) and torch is 2.1 or later.
"""
import argparse
import concurrent.futures
import functools
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORE_SOURCES = ["module.cc", "errors.cc", "arrays.cc", "work.cc", "communicator.cc"]
TORCH_SOURCES = sorted(p.name for p in (HERE / "torch").glob("*.cc"))  # every file of the backend


@functools.lru_cache(maxsize=None)
def libcoll_bytes(libdir):
    """libcoll.so's contents, read once: both probes below search them."""
    return (pathlib.Path(libdir) / "libcoll.so").resolve().read_bytes()


def libcoll_has_cuda(libdir):
    """libcoll built with CUDA resolves the driver's entry points by name at run time."""
    return b"cuMemGetAddressRange" in libcoll_bytes(libdir)


def libcoll_cxx11_abi(libdir):
    """Whether libcoll was built with the C++11 std::string (its C++ API names std::__cxx11)."""
    return b"__cxx11" in libcoll_bytes(libdir)


def torch_abi_defines(torch, libdir):
    """torch's C++ ABI, which libcoll's C++ API (std::string in CommOptions and the store) must
    share, and the pybind11 ABI tags torch was built with, so that its types cross over."""
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    if abi != int(libcoll_cxx11_abi(libdir)):
        sys.exit(f"build_for_python: this torch uses _GLIBCXX_USE_CXX11_ABI={abi} but libcoll in {libdir} was built "
                 f"with {1 - abi}: rebuild libcoll with -DCMAKE_CXX_FLAGS=-D_GLIBCXX_USE_CXX11_ABI={abi} "
                 "(pip wheels of torch before 2.7 use 0), or use a torch built with the other ABI")
    defines = [f"_GLIBCXX_USE_CXX11_ABI={abi}"]
    for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
        value = getattr(torch._C, f"_PYBIND11_{name}", None)
        if value:
            defines.append(f'PYBIND11_{name}="{value}"')
    return defines


def pybind11_include(torch_includes):
    for d in torch_includes:  # a pip torch ships the pybind11 it was built with: use that one
        if (pathlib.Path(d) / "pybind11" / "pybind11.h").exists():
            return []
    try:
        import pybind11
        return [pybind11.get_include()]
    except ImportError:
        if pathlib.Path("/usr/include/pybind11/pybind11.h").exists():  # Debian's pybind11-dev
            return []
        sys.exit("build_for_python: pybind11 is missing: pip install pybind11 (or apt-get install pybind11-dev)")


def write_build_info(out, torch_version, cuda):
    """coll/_build_info.py, as CMake writes it from _build_info.py.in (transports: the two every
    build has, and CUDA's where libcoll has it; UCX and verbs are not probed here)."""
    text = (HERE / "coll" / "_build_info.py.in").read_text()
    version = re.search(r'COLL_VERSION_STRING "([^"]+)"', (ROOT / "include/coll/version.h").read_text()).group(1)
    values = {"PROJECT_VERSION": version, "COLL_BUILT_TORCH": torch_version, "COLL_PY_CUDA": str(bool(cuda)),
              "COLL_PY_TRANSPORTS": "socket,shm" + (",cuda" if cuda else ""), "COLL_PY_OPTIONAL": ""}
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    (out / "_build_info.py").write_text(text)


def compile_module(name, sources, out_dir, build_dir, includes, defines, libs, libdirs, jobs):
    cxx = os.environ.get("CXX", "c++")
    flags = ["-O2", "-g0", "-fPIC", "-std=c++20", "-fvisibility=hidden", "-Wno-deprecated-declarations"]
    flags += [f"-I{d}" for d in includes] + [f"-D{d}" for d in defines]
    build_dir.mkdir(parents=True, exist_ok=True)

    def one(src):
        obj = build_dir / (src.parent.name + "_" + src.stem + ".o")
        cmd = [cxx, *flags, "-c", str(src), "-o", str(obj)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}\n{run.stderr}")
        return obj

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(one, s) for s in sources]
        errors = [f.exception() for f in futures if f.exception()]
        if errors:
            sys.exit("build_for_python: compiling " + name + " failed:\n" + "\n".join(map(str, errors)))
        objects = [f.result() for f in futures]
    target = out_dir / (name + sysconfig.get_config_var("EXT_SUFFIX"))
    link = [cxx, "-shared", *map(str, objects), "-o", str(target)]
    link += [f"-L{d}" for d in libdirs] + [f"-Wl,-rpath,{d}" for d in libdirs] + [f"-l{l}" for l in libs]
    # The shared C++ runtime by name: where the compiler's libstdc++.so link is missing (seen on
    # an Ubuntu image with g++ 13), the driver's -lstdc++ takes libstdc++.a, and a second, static
    # C++ runtime in the module crashes the first time torch's error text formats a number
    # (its locale facets are not the process's).
    link += ["-l:libstdc++.so.6"]
    run = subprocess.run(link, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"build_for_python: linking {name} failed:\n{' '.join(link)}\n{run.stderr}")
    if b"libstdc++.so.6" not in target.read_bytes():
        sys.exit(f"build_for_python: {target} did not link the shared libstdc++.so.6 (a static copy would crash)")
    print(f"built {target}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="folder holding libcoll.so (build/lib, or an install's lib)")
    ap.add_argument("--include", default=str(ROOT / "include"), help="coll's public headers")
    ap.add_argument("--out", required=True, help="the package goes to OUT/coll")
    ap.add_argument("--cuda", choices=["auto", "on", "off"], default="auto",
                    help="CUDA tensors in the torch backend (auto: when libcoll has CUDA)")
    ap.add_argument("--no-torch", action="store_true", help="skip the torch backend")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()

    libdir = str(pathlib.Path(args.lib).resolve())
    if not (pathlib.Path(libdir) / "libcoll.so").exists():
        sys.exit(f"build_for_python: no libcoll.so in {libdir}: build it first (cmake --build build --target coll)")
    out = pathlib.Path(args.out).resolve() / "coll"
    out.mkdir(parents=True, exist_ok=True)
    build = pathlib.Path(args.out).resolve() / "objects"
    for f in ("__init__.py", "__main__.py", "torch.py", "torch_ft.py"):
        shutil.copy(HERE / "coll" / f, out / f)

    try:
        import torch
        import torch.utils.cpp_extension as ext
    except ImportError:
        torch = None
    torch_includes = ext.include_paths() if torch is not None and not args.no_torch else []
    python_include = sysconfig.get_paths()["include"]
    core_includes = [args.include, python_include] + torch_includes[:1] + pybind11_include(torch_includes)
    compile_module("_coll", [HERE / s for s in CORE_SOURCES], out, build, core_includes, [], ["coll"], [libdir],
                   args.jobs)
    cuda = libcoll_has_cuda(libdir) if args.cuda == "auto" else args.cuda == "on"
    write_build_info(out, "" if torch is None or args.no_torch else torch.__version__, cuda)
    if torch is None or args.no_torch:
        print("torch not found for this Python: built the numpy API only" if torch is None else "torch skipped")
        return
    defines = torch_abi_defines(torch, libdir) + ["TORCH_EXTENSION_NAME=_torch", "TORCH_API_INCLUDE_EXTENSION_H"]
    defines += ["COLL_HAVE_CUDA=1"] if cuda else []
    includes = [args.include, python_include] + torch_includes + pybind11_include(torch_includes)
    compile_module("_torch", [HERE / "torch" / s for s in TORCH_SOURCES], out, build, includes, defines,
                   ["coll", "torch_python", "torch_cpu", "torch", "c10"], [libdir] + ext.library_paths(), args.jobs)
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    gpu = cuda and (major, minor) >= (2, 1) and torch.version.cuda is not None
    why = "" if gpu else (" (libcoll has no CUDA)" if not cuda else " (CUDA tensors need a CUDA torch 2.1 or later)")
    print(f"torch {torch.__version__}: the backend takes CPU{' and CUDA' if gpu else ''} tensors{why}")


if __name__ == "__main__":
    main()
