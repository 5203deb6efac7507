"""A MindSpore user needs no torch: `import numprobe`, the engine binding and the MindSpore capture
load without it (the MindSpore lane's venv has no torch installed)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")


def test_import_numprobe_without_torch():
    code = ("import sys, numprobe, numpy as np\n"
            "from numprobe.mindspore import PrecisionDebugger\n"
            "s = numprobe._engine.tensor_stats(np.array([1.0, -2.0, np.nan, np.inf, 0.0]))\n"
            "assert (s['nan'], s['pos_inf'], s['zeros'], s['max'], s['min']) == (1, 1, 1, float('inf'), -2.0), s\n"
            "assert numprobe.PrecisionDebugger is not None\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "print('ok')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ))
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr
