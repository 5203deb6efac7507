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


ENGINE_CONSUMER = r"""
#include <cstdio>
#include "numprobe/acc_check.h"
#include "numprobe/compare.h"
#include "numprobe/dump_tree.h"
int main(int argc, char** argv) {
  size_t entries = 0;
  for (const numprobe::RankLocation& loc : numprobe::find_rank_dumps(argv[1]))
    entries += numprobe::load_rank_dump(loc).dump.entries.size();
  numprobe::CompareReport rep = numprobe::compare_dumps(argv[1], argv[1]);
  numprobe::AccStatus worst = numprobe::acc_worse(numprobe::AccStatus::kPass, numprobe::AccStatus::kError);
  std::printf("entries %zu pairs %zu errors %zu acc %s %s\n", entries, rep.pairs.size(),
              rep.pairs.empty() ? 0 : rep.pairs[0].error, numprobe::acc_status_name(worst),
              numprobe::acc_standard_name(numprobe::acc_standard_for("conv2d")));
}
"""


def test_find_package_from_install_prefix(tmp_path, fixtures):
    """A CMake user gets numprobe::numprobe (capture) and numprobe::engine (dumps, compare) from an
    install prefix, and the installed CLI runs acc-check with the Python package installed beside
    it, not the source tree it was built from."""
    prefix = tmp_path / "prefix"
    sh("cmake", "--install", BUILD, "--prefix", prefix)
    assert (prefix / "lib" / "cmake" / "numprobe" / "numprobeConfig.cmake").exists()
    sh("cmake", "-S", ROOT / "examples", "-B", tmp_path / "b", "-G", "Ninja",
       f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release")
    sh("cmake", "--build", tmp_path / "b")
    lib_env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(
        filter(None, [str(prefix / "lib"), os.environ.get("LD_LIBRARY_PATH")]))}
    sh(tmp_path / "b" / "train_mlp", tmp_path / "d", "L1", env=lib_env)
    assert len(load(rank_dir(tmp_path / "d" / "step2") / "dump.json")["data"]) > 10

    # The installed headers are exactly the public ones (include/numprobe), capture's two with
    # libnumprobe.so.
    inc = prefix / "include"
    installed = sorted(str(h.relative_to(inc)) for h in inc.rglob("*.h"))
    assert installed == sorted(str(h.relative_to(ROOT / "include")) for h in (ROOT / "include").rglob("*.h"))
    assert (prefix / "lib" / "libnumprobe.so").exists() and (prefix / "lib" / "libnumprobe_engine.so").exists()

    # numprobe::engine alone: no torch in the consumer's build. Every engine header compiles on its
    # own against the prefix (what it includes was installed with it).
    src = tmp_path / "engine_consumer"
    src.mkdir()
    (src / "main.cc").write_text(ENGINE_CONSUMER)
    alone = []
    for i, h in enumerate(x for x in installed if not x.startswith("numprobe/capture")):
        (src / f"header{i}.cc").write_text(f'#include "{h}"\n')
        alone.append(f"header{i}.cc")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.22)\nproject(engine_consumer CXX)\n"
        f"find_package(numprobe REQUIRED)\nadd_executable(engine_consumer main.cc {' '.join(alone)})\n"
        "target_link_libraries(engine_consumer PRIVATE numprobe::engine)\n")
    sh("cmake", "-S", src, "-B", tmp_path / "e", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}")
    sh("cmake", "--build", tmp_path / "e")
    out = sh(tmp_path / "e" / "engine_consumer", fixtures / "quick_start_resnet50_gpu_mix_statistics",
             env=lib_env)
    assert out.split() == ["entries", "1520", "pairs", "2", "errors", "0", "acc", "error", "thousandth"], out

    # The installed CLI hands acc-check the installed package: a stand-in python shows PYTHONPATH.
    fake = tmp_path / "fake_python"
    fake.write_text('#!/bin/sh\necho "PYTHONPATH=$PYTHONPATH"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMPROBE_PYTHONPATH")}
    out = sh(prefix / "bin" / "numprobe", "acc-check", "-api_info", "x", "-o", "y",
             env={**env, "NUMPROBE_PYTHON": str(fake)})
    assert out.strip() == f"PYTHONPATH={prefix / 'lib' / 'numprobe' / 'python'}", out
    # ... and really runs there.
    out = sh(prefix / "bin" / "numprobe", "acc-check", "-api_info",
             fixtures / "acc_check_input" / "pytorch" / "dump.json", "-o", tmp_path / "acc",
             cwd=tmp_path, env=env)
    assert list((tmp_path / "acc").glob("accuracy_checking_result_*.csv")), out


def test_pip_install_offline_into_venv(tmp_path, fixtures):
    """A venv user gets the package with every subpackage and a `numprobe` command (the CMake-built
    CLI, inside the package), and capture, compare and acc-check all run from there, outside the
    source tree, with no variable pointing back at it."""
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
    # Nothing points at the source tree or a build: what runs is what was installed.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NUMPROBE_PYTHONPATH", "NUMPROBE_PYTHON", "NUMPROBE_CLI")}
    code = ("import numprobe, numprobe.acc_check, torch\n"
            "assert 'site-packages' in numprobe.__file__, numprobe.__file__\n"
            "assert 'site-packages' in numprobe.acc_check.__file__\n"
            f"d = numprobe.PrecisionDebugger(dump_path={str(tmp_path / 'dump')!r}, level='L1')\n"
            "d.start(); torch.nn.functional.relu(torch.ones(3)); d.stop(); d.close()\n")
    sh(py, "-c", code, cwd=tmp_path, env=env)
    data = load(rank_dir(tmp_path / "dump" / "step0") / "dump.json")["data"]
    assert "Functional.relu.0.forward" in data

    numprobe_cmd = env_dir / "bin" / "numprobe"
    out = sh(numprobe_cmd, "compare", "-t", tmp_path / "dump", "-g", tmp_path / "dump",
             "-o", tmp_path / "cmp", cwd=tmp_path, env=env)
    assert "no divergence beyond noise" in out
    out = sh(numprobe_cmd, "acc-check", "-api_info", fixtures / "acc_check_input" / "pytorch" / "dump.json",
             "-o", tmp_path / "acc", cwd=tmp_path, env=env)
    assert "acc-check:" in out and "error" in out  # its summary line ("... 0 error ...")
    assert list((tmp_path / "acc").glob("accuracy_checking_result_*.csv"))
