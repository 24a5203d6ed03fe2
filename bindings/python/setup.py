"""pip install ./bindings/python: builds coll's Python package with the project's CMake build.

    python3 -m venv --system-site-packages venv        # Debian's torch and numpy stay visible
    venv/bin/pip install --no-build-isolation ./bindings/python

--no-build-isolation: the build needs the system's setuptools, pybind11 and libtorch, and an
isolated build would try to download them. The C++ library is linked in statically, so the
installed package needs nothing from the source tree. The torch backend (coll.torch) is built
when libtorch-dev is installed.

COLL_SETUP_BUILD_DIR=DIR: package the extensions already built in that build tree (e.g. the
project's build/, after `cmake --build build`) instead of configuring and building a fresh one,
so a test that pip-installs the package neither compiles the library again nor touches DIR.
"""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


class CMakeTarget(Extension):
    def __init__(self, name, target, optional=False):
        super().__init__(name, sources=[])
        self.target, self.optional = target, optional


class CMakeBuild(build_ext):
    def run(self):
        if os.environ.get("COLL_SETUP_BUILD_DIR"):
            build = pathlib.Path(os.environ["COLL_SETUP_BUILD_DIR"]).resolve()
        else:
            build = pathlib.Path(self.build_temp).resolve() / "cmake"
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DCOLL_BUILD_TESTS=OFF", "-DCOLL_BUILD_BENCH=OFF",
                                   f"-DPYTHON_EXECUTABLE={sys.executable}"])
        built = build / "python" / "coll"
        prebuilt = bool(os.environ.get("COLL_SETUP_BUILD_DIR"))
        for ext in self.extensions:
            if prebuilt:
                proc = subprocess.CompletedProcess([], 0)
            else:
                proc = subprocess.run(["cmake", "--build", str(build), "--target", ext.target,
                                       "-j", str(os.cpu_count() or 1)])
            found = sorted(built.glob(ext.name.rsplit(".", 1)[-1] + ".*.so"))
            if proc.returncode != 0 or not found:
                if ext.optional:
                    print(f"setup.py: {ext.name} not built (optional; libtorch-dev missing?)")
                    continue
                raise RuntimeError(f"building {ext.target} failed")
            dest = pathlib.Path(self.get_ext_fullpath(ext.name))
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(found[0], dest)


setup(
    name="coll",
    version="0.1.0",
    description="coll: collective communication for distributed training (numpy API, torch.distributed backend)",
    packages=["coll"],
    ext_modules=[CMakeTarget("coll._coll", "coll_python"), CMakeTarget("coll._torch", "coll_torch", optional=True)],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
)
