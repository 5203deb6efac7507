"""pip install . : builds numprobe._C, numprobe._engine (the torch-free engine the MindSpore capture
uses) and the numprobe CLI with CMake (offline; needs the Debian
packages of scripts/setup.sh) and installs the Python package from python/numprobe (with
numprobe.acc_check), the CLI binary inside it (numprobe/bin/numprobe) and a `numprobe` command that
runs that binary with this interpreter (numprobe_cli.py).

In a venv made with --system-site-packages (torch comes from Debian):
    python -m venv --system-site-packages env && env/bin/pip install --no-build-isolation .
"""
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out_dir = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        # One CMake build directory per interpreter and torch: pip builds in the source tree, and a
        # cache configured for another torch (Debian's vs a venv's pip torch) would be reused.
        spec = importlib.util.find_spec("torch")
        key = hashlib.sha1(f"{sys.executable}|{spec and spec.origin}".encode()).hexdigest()[:12]
        build_dir = os.path.abspath(os.path.join(self.build_temp, f"cmake-{key}"))
        os.makedirs(build_dir, exist_ok=True)
        gen = ["-G", "Ninja"] if subprocess.call(["which", "ninja"], stdout=subprocess.DEVNULL) == 0 else []
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, *gen,
                               "-DCMAKE_BUILD_TYPE=Release", "-DNUMPROBE_BUILD_TESTS=OFF",
                               "-DNUMPROBE_BUILD_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}",
                               f"-DNUMPROBE_PYTHON_OUTPUT_DIR={out_dir}",
                               # setuptools copies the Python files itself
                               "-DNUMPROBE_PYTHON_NO_LINKS=ON",
                               # e.g. a CUDA torch's toolkit: scripts/torch_cmake_args.py
                               *os.environ.get("NUMPROBE_CMAKE_ARGS", "").split()])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "numprobe_python", "numprobe",
                               "numprobe_engine_python",
                               "-j", str(min(os.cpu_count() or 2, 4))])
        # The CLI the CMake build makes, inside the package: numprobe_cli runs it, and it finds this
        # package beside itself (src/cli/python_front.cc) for acc-check.
        os.makedirs(os.path.join(out_dir, "bin"), exist_ok=True)
        shutil.copy2(os.path.join(build_dir, "bin", "numprobe"), os.path.join(out_dir, "bin", "numprobe"))


setup(
    name="numprobe",
    version="0.1.0",
    description="Find the first op where two training runs diverge (msprobe-compatible dumps)",
    package_dir={"": "python"},
    packages=find_packages("python"),
    py_modules=["numprobe_cli"],
    entry_points={"console_scripts": ["numprobe = numprobe_cli:main"]},
    ext_modules=[Extension("numprobe._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
)
