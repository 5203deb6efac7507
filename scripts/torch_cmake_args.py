"""Prints the extra CMake arguments a build against this interpreter's torch needs, one a line.

A CUDA build of torch (what `pip install torch` gives on x86-64) has CMake files that insist on a CUDA
toolkit and on NVRTC, even for code that includes no CUDA header. Where the toolkit that nvcc belongs
to lacks NVRTC (a compiler-only toolkit, as on this project's machines), torch's own pip package
(nvidia-cuda-nvrtc) has it. A CPU build of torch needs nothing: nothing is printed.

CMake runs it (cmake/torch_capture.cmake) before find_package(Torch); a value set by hand wins.
"""
import glob
import os
import shutil
import sys

import torch


def main():
    if not torch.version.cuda:
        return 0
    nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc")
    toolkit = None
    for cand in filter(None, [os.environ.get("CUDA_HOME"), "/usr/local/cuda",
                              nvcc and os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))]):
        if os.path.exists(os.path.join(cand, "include", "cuda_runtime.h")):
            toolkit = cand
            break
    if toolkit is None:
        sys.stderr.write(f"torch {torch.__version__} is a CUDA build, and its CMake files need a CUDA "
                         "toolkit (nvcc and cuda_runtime.h); none was found (set CUDA_HOME)\n")
        return 1
    print(f"-DCUDA_TOOLKIT_ROOT_DIR={toolkit}")
    if not glob.glob(os.path.join(toolkit, "lib64", "libnvrtc.so*")):
        site = os.path.dirname(os.path.dirname(torch.__file__))
        found = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so.*")) +
                       glob.glob(os.path.join(site, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*")))
        found = [f for f in found if "builtins" not in f and ".alt." not in f]
        if not found:
            sys.stderr.write(f"no libnvrtc in {toolkit} or in torch's nvidia packages\n")
            return 1
        print(f"-DCUDA_nvrtc_LIBRARY={found[0]}")
        print(f"-DCUDA_NVRTC_LIB={found[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
