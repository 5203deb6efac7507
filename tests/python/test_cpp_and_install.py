"""The C++ API (examples/train_mlp, find_package(numprobe)) and `pip install .` offline."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, rank_dir

EXAMPLE = BUILD / "bin" / "train_mlp"


def sh(*cmd, cwd=None, env=None):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p.stdout


def load(path):
    with open(path) as f:
        return json.load(f)


def test_cpp_example_dumps_aten_and_scopes(tmp_path, cli):
    out = sh(EXAMPLE, tmp_path / "a", "mix")
    assert out.count("loss") == 3
    rank = rank_dir(tmp_path / "a" / "step0")
    d = load(rank / "dump.json")
    assert d["level"] == "mix"
    names = list(d["data"])
    assert names[0] == "Aten.addmm.default.0.forward"
    assert "Aten.gelu.default.0.backward" in names
    c = load(rank / "construct.json")
    assert c["Aten.addmm.default.0.forward"] == "Module.mlp.fc1.Linear.forward.0"
    assert c["Module.mlp.fc1.Linear.forward.0"] == "Module.mlp.Mlp.forward.0"
    fc1 = d["data"]["Module.mlp.fc1.Linear.forward.0"]
    assert fc1["output"][0]["shape"] == [8, 32]
    # Same program twice: the compare finds nothing.
    sh(EXAMPLE, tmp_path / "b", "mix")
    cli("compare", "-t", tmp_path / "b", "-g", tmp_path / "a", "-o", tmp_path / "cmp")
    s = load(tmp_path / "cmp" / "summary.json")
    assert len(s["pairs"]) == 3
    assert all(p["first_divergence"] is None and p["error"] == 0 for p in s["pairs"])


def test_cpp_example_bad_level_is_a_clear_error(tmp_path):
    p = subprocess.run([str(EXAMPLE), str(tmp_path), "L7"], capture_output=True, text=True)
    assert p.returncode == 1 and '"level"' in p.stderr and "L7" in p.stderr


def test_find_package_from_install_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    sh("cmake", "--install", BUILD, "--prefix", prefix)
    assert (prefix / "lib" / "cmake" / "numprobe" / "numprobeConfig.cmake").exists()
    sh("cmake", "-S", ROOT / "examples", "-B", tmp_path / "b", "-G", "Ninja",
       f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release")
    sh("cmake", "--build", tmp_path / "b")
    sh(tmp_path / "b" / "train_mlp", tmp_path / "d", "L1",
       env={**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(
           filter(None, [str(prefix / "lib"), os.environ.get("LD_LIBRARY_PATH")]))})
    assert len(load(rank_dir(tmp_path / "d" / "step2") / "dump.json")["data"]) > 10


def test_pip_install_offline_into_venv(tmp_path):
    env_dir = tmp_path / "env"
    sh(sys.executable, "-m", "venv", "--system-site-packages", env_dir)
    py = env_dir / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        # The tests run in a venv (the torch 2.x lane): the new venv sees its packages, torch among
        # them, as --system-site-packages lets a venv see Debian's torch.
        site = pathlib.Path(sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
        (site / "lane.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    sh(py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", "-q", ROOT,
       cwd=tmp_path)
    code = ("import numprobe, torch\n"
            "assert 'site-packages' in numprobe.__file__, numprobe.__file__\n"
            f"d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'dump')!r}, level='L1')\n"
            "d.start(); torch.nn.functional.relu(torch.ones(3)); d.stop(); d.close()\n")
    sh(py, "-c", code, cwd=tmp_path)
    data = load(rank_dir(tmp_path / "dump" / "step0") / "dump.json")["data"]
    assert "Functional.relu.0.forward" in data
