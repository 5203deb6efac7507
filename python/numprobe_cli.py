"""The `numprobe` command of a pip install: runs the CLI binary installed inside the numprobe package
(the one the CMake build makes), with this interpreter for acc-check's replay.

A module of its own, outside the numprobe package: importing numprobe would import torch (seconds)
for a command that, for compare or info, never needs it.
"""
import importlib.util
import os
import sys


def main():
    spec = importlib.util.find_spec("numprobe")  # a top-level package: found, not imported
    where = list(spec.submodule_search_locations or []) if spec else []
    binary = next((os.path.join(d, "bin", "numprobe") for d in where
                   if os.access(os.path.join(d, "bin", "numprobe"), os.X_OK)), None)
    if binary is None:
        sys.stderr.write("numprobe: the CLI binary is not installed in the numprobe package "
                         f"({where or 'numprobe not found'}); reinstall with pip\n")
        return 1
    os.environ.setdefault("NUMPROBE_PYTHON", sys.executable)
    os.execv(binary, ["numprobe", *sys.argv[1:]])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
