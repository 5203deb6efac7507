"""numprobe._C (torch) and numprobe._engine (torch-free) in one process, in either order: both
bind the acc-check result types. Regression: pybind11's global type registry refused the second
module's AccColumns ("generic_type: type "AccColumns" is already registered!"), so a test session
that had loaded _C could not import _engine."""
import subprocess
import sys

import pytest

from conftest import PYDIR


@pytest.mark.parametrize("first,second", [("_C", "_engine"), ("_engine", "_C")])
def test_both_bindings_load_in_one_process(first, second):
    code = (f"import sys; sys.path.insert(0, {str(PYDIR)!r})\n"
            f"from numprobe import {first} as a\nfrom numprobe import {second} as b\n"
            "print(a.AccColumns.__module__, b.AccColumns.__module__)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [f"numprobe.{first}", f"numprobe.{second}"], p.stdout
