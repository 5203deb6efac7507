"""scripts/check_includes.py on small trees: each rule it enforces fails on a violation and passes
on the tree without it. The floors come from the tree's own numprobe_library/numprobe_floor calls."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check_includes.py"

CMAKE = """
numprobe_library(base
  PUBLIC_LINK Threads::Threads)
numprobe_library(core
  USES base
  LINK ZLIB::ZLIB)  # a comment (a parenthesis inside it) is no argument
numprobe_library(fw
  DIR room/fw
  USES core)
numprobe_floor(cli
  USES fw)
"""


def make_tree(tmp_path, sources):
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    (tmp_path / "include" / "numprobe").mkdir(parents=True)
    (tmp_path / "include" / "numprobe" / "error.h").write_text("#pragma once\n")
    files = {
        "src/base/file_util.h": "#pragma once\n",
        "src/base/file_util.cc": '#include "base/file_util.h"\n' "void f() { ::rename(a, b); }\n",
        "src/core/stats.h": '#include "base/file_util.h"\n',
        "src/room/fw/hook.cc": '#include "core/stats.h"\n#include "base/file_util.h"\n',
        "src/cli/main.cc": '#include "room/fw/hook.h"\n#include "numprobe/error.h"\n',
        "src/room/fw/hook.h": "#pragma once\n",
    }
    files.update(sources)
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return subprocess.run([sys.executable, str(CHECK), "--root", str(tmp_path)],
                          capture_output=True, text=True)


def test_a_clean_tree_passes(tmp_path):
    r = make_tree(tmp_path, {})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "clean" in r.stdout


@pytest.mark.parametrize("rel, text, expect", [
    # a floor below may not include one above (core does not use fw)
    ("src/core/bad.cc", '#include "room/fw/hook.h"\n', 'src/core may not include "room/fw/hook.h"'),
    # a second JSON library, even in base
    ("src/core/json.cc", "#include <nlohmann/json.hpp>\n", "JSON is read by base"),
    ("src/base/json2.cc", "#include <nlohmann/json.hpp>\n", "JSON is read by base"),
    # a file committed by hand outside base
    ("src/room/fw/save.cc", "void g() { std::rename(tmp, out); }\n", "std::rename()"),
    ("src/cli/sync.cc", "void g(int fd) { ::fsync(fd); }\n", "fsync()"),
    # parallel work started by hand outside base
    ("src/core/par.cc", "auto f = std::async(std::launch::async, work);\n", "std::async()"),
    # a folder no declaration names
    ("src/stray/x.cc", "int x;\n", "declared by no numprobe_library"),
    # an include that resolves nowhere
    ("src/core/missing.cc", '#include "core/nothing.h"\n', "does not resolve"),
])
def test_each_rule_fails_on_its_violation(tmp_path, rel, text, expect):
    r = make_tree(tmp_path, {rel: text})
    assert r.returncode == 1, r.stdout
    assert expect in r.stdout, r.stdout


def test_a_comment_naming_rename_is_no_violation(tmp_path):
    r = make_tree(tmp_path, {"src/core/doc.cc": "// the writer calls rename(tmp, out) for us\n"})
    assert r.returncode == 0, r.stdout


def test_uses_of_an_undeclared_library_is_an_error(tmp_path):
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "extra.cmake").write_text("numprobe_library(x\n  USES nowhere)\n")
    r = make_tree(tmp_path, {})
    assert r.returncode != 0
    assert "unknown library 'nowhere'" in r.stdout + r.stderr

