"""msprobe's own free_benchmark and grad_probe, live, from either torch lane: msprobe 8.3.3 (the newest
PyPI release whose PyTorch side still has both) in its own venv, .venv/msprobe_legacy, made by
`scripts/setup_venv.sh msprobe_legacy` (which `make test-python` and `make test-torch2` run first).
Its torch (2.13, CPU) is not the lane's, so it runs in a subprocess: msprobe_legacy_driver.py."""
import json
import os
import pathlib
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DRIVER = HERE / "msprobe_legacy_driver.py"
PYTHON = pathlib.Path(os.environ.get("NUMPROBE_MSPROBE_LEGACY_PYTHON",
                                     ROOT / ".venv" / "msprobe_legacy" / "bin" / "python"))


def python():
    """The venv's python; skipped, saying why, where the venv was not made (setup_venv.sh prints
    the reason when pip cannot install it, and writes its stamp only once everything installed)."""
    stamp = PYTHON.parent.parent / ".numprobe-requirements.sha256"
    if not PYTHON.exists() or ("NUMPROBE_MSPROBE_LEGACY_PYTHON" not in os.environ and not stamp.exists()):
        pytest.skip(f"msprobe 8.3.3 not installed ({PYTHON} missing): run "
                    "`bash scripts/setup_venv.sh msprobe_legacy` (tests/requirements/msprobe_legacy.txt)")
    return PYTHON


def run(*args, cwd=None):
    """Runs the driver with `args`; the JSON object its last stdout line holds (None for none).
    A failure shows msprobe's own output."""
    p = subprocess.run([str(python()), str(DRIVER), *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"msprobe 8.3.3 ({' '.join(map(str, args))}) failed ({p.returncode}):\n"
                             f"{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    lines = p.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
