import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = (ROOT / ".." / "shared" / "fixtures" / "msprobe").resolve()
CLI = pathlib.Path(os.environ.get("NUMPROBE_CLI", ROOT / "build" / "bin" / "numprobe"))


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
