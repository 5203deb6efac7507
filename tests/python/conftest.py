import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = (ROOT / ".." / "shared" / "fixtures" / "msprobe").resolve()
# One suite, two lanes: `make test-python` runs it with Debian's torch against build/ and python/;
# `make test-torch2` with pip's torch against build-torch2/ and its own package tree (two builds
# cannot share python/numprobe/_C*.so). These variables say which build the tests exercise.
BUILD = pathlib.Path(os.environ.get("NUMPROBE_BUILD_DIR", ROOT / "build"))
PYDIR = pathlib.Path(os.environ.get("NUMPROBE_PYTHONPATH", ROOT / "python"))
CLI = pathlib.Path(os.environ.get("NUMPROBE_CLI", BUILD / "bin" / "numprobe"))


@pytest.fixture(scope="session")
def cli():
    if not CLI.exists():
        pytest.fail(f"{CLI} not built: run `make build` first")

    def run(*args, check=True):
        p = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"numprobe {' '.join(map(str, args))} failed "
                                 f"({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def fixtures():
    return FIXTURES


def live(module):
    """Imports a live second reader (msprobe, TensorBoard, transformers, ...): skipped where it is not
    installed (Debian's torch 1.13 lane), a failure in the lane that promises it (NUMPROBE_REQUIRE_LIVE,
    set by `make test-torch2`), so a broken install can never pass as a skip."""
    if os.environ.get("NUMPROBE_REQUIRE_LIVE"):
        import importlib
        try:
            return importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - any import failure is the finding
            pytest.fail(f"live reader {module} not importable in this lane: {e!r}")
    return pytest.importorskip(module)


def rank_dir(step_dir):
    """The one rank directory a single-process capture wrote in step_dir: `proc{pid}`, as msprobe names
    a process without a distributed rank (`rank{N}` where there is one)."""
    dirs = [d for d in pathlib.Path(step_dir).iterdir() if d.is_dir()]
    assert len(dirs) == 1, f"{step_dir}: expected one rank directory, found {sorted(d.name for d in dirs)}"
    return dirs[0]
