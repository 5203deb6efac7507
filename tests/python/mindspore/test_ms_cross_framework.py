"""MindSpore against PyTorch, for real: the GPT-style twin of examples/mindspore (gpt_twin_ms.py
under this venv, gpt_twin_pt.py under a Python with torch, the same weights and batch through .npy
files), each captured by numprobe (mix, statistics), compared and graphed with -am -cm. Run by
`make test-mindspore`; skipped, with the reason, where no Python with torch is found."""
import glob
import json
import os
import pathlib
import re
import sqlite3
import subprocess
import sys

import pytest

pytest.importorskip("mindspore.nn", reason="MindSpore is not installed (the MindSpore lane has it)")

from conftest import ROOT, read_csv  # noqa: E402

EXAMPLE = ROOT / "examples" / "mindspore"
sys.path.insert(0, str(EXAMPLE))
import gpt_twin_common as C  # noqa: E402

# The torch side: NUMPROBE_TORCH_PYTHON, else Debian's python3 with torch 1.13 and build/'s package.
TORCH_PY = os.environ.get("NUMPROBE_TORCH_PYTHON", "/usr/bin/python3")
TORCH_PATH = os.environ.get("NUMPROBE_TORCH_PYTHONPATH", str(ROOT / "python"))

# API rows one framework records and the other cannot (docs/compare.md, "MindSpore against
# PyTorch"): MindSpore's nn.LayerNorm casts (Tensor.astype) and its primitive's mean/rstd outputs
# and their (null) gradients; weight gradients of API calls, which PyTorch's API backward hook
# cannot see (its hook sits on the output's view node), and the mask's zero gradient.
ONE_SIDED = re.compile(r"^(Tensor\.astype\.\d+\.|"
                       r"Primitive\.\w+\.LayerNorm\.\d+\.(forward\.output\.[12]$|backward\.input\.[12]$)|"
                       r"(MintFunctional\.linear|Mint\.matmul|Tensor\.masked_fill)\.\d+\.backward\.output\.[12]$)")


def _torch_available():
    try:
        p = subprocess.run([TORCH_PY, "-c", "import torch"], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{TORCH_PY}: {e}"
    return "" if p.returncode == 0 else f"{TORCH_PY} cannot import torch"


def _run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **env))
    assert p.returncode == 0, p.stdout + p.stderr
    return float(re.search(r"loss ([-\d.e]+)", p.stdout).group(1))


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    why = _torch_available()
    if why:
        print(f"SKIPPED cross-framework twin: {why}")
        pytest.skip(f"no Python with torch for the PyTorch half: {why}")
    out = tmp_path_factory.mktemp("twin")
    w = out / "weights"
    losses = {"pt": _run([TORCH_PY, str(EXAMPLE / "gpt_twin_pt.py"), "--weights", w, "--out",
                          out / "pt"], {"PYTHONPATH": TORCH_PATH})}
    for fault in C.FAULTS:
        name = f"ms_{fault or 'clean'}"
        losses[name] = _run([sys.executable, str(EXAMPLE / "gpt_twin_ms.py"), "--weights", w,
                             "--out", out / name, "--fault", fault], {})
    return out, losses


def compare(cli, out, target, name, options=("-am", "-cm")):
    res = out / f"cmp_{name}"
    cli("compare", "-t", out / target, "-g", out / "pt", "-o", res, *options)
    (pair,) = json.loads((res / "summary.json").read_text())["pairs"]
    (csv_path,) = glob.glob(str(res / "compare_result_*.csv"))
    return pair, read_csv(csv_path)


def is_api(name):
    return not name.startswith(("Cell.", "Module."))


def test_the_two_halves_start_from_the_same_numbers(twin):
    _, losses = twin
    assert abs(losses["ms_clean"] - losses["pt"]) <= 1e-5 * abs(losses["pt"]), losses


def test_clean_pair_pairs_every_api_entry_and_claims_no_divergence(twin, cli):
    out, _ = twin
    pair, rows = compare(cli, out, "ms_clean", "clean")
    assert pair["first_divergence"] is None, pair["first_divergence"]
    api = [r for r in rows if r["NPU Name"] != "N/A" and is_api(r["NPU Name"])]
    paired = [r for r in api if r["Bench Name"] != "N/A"]
    unpaired = [r["NPU Name"] for r in api if r["Bench Name"] == "N/A"]
    print(f"API rows of the MindSpore run: {len(api)}, paired {len(paired)}, "
          f"one-sided {len(unpaired)}")
    assert [n for n in unpaired if not ONE_SIDED.match(n)] == []
    # Every API entry that is not one of MindSpore's own casts pairs with a PyTorch entry.
    entries = {re.sub(r"\.(input|output)\..*$", "", r["NPU Name"]) for r in api}
    paired_entries = {re.sub(r"\.(input|output)\..*$", "", r["NPU Name"]) for r in paired}
    assert {e for e in entries - paired_entries if not e.startswith("Tensor.astype.")} == set()
    assert paired and all(r["Match"] for r in paired)


# The faulty op of the last block: its second LayerNorm (two per block), its GELU (one per block).
@pytest.mark.parametrize("fault,entry,golden", [
    ("ln_eps", f"Primitive.layer_norm.LayerNorm.{2 * C.FAULTY_BLOCK + 1}.forward",
     f"Functional.layer_norm.{2 * C.FAULTY_BLOCK + 1}.forward"),
    ("gelu_tanh", f"Functional.gelu.{C.FAULTY_BLOCK}.forward",
     f"Functional.gelu.{C.FAULTY_BLOCK}.forward"),
])
def test_a_small_fault_is_named(twin, cli, fault, entry, golden):
    out, _ = twin
    pair, _ = compare(cli, out, f"ms_{fault}", fault)
    fd = pair["first_divergence"]
    assert fd is not None and fd["entry"] == entry, fd
    # numprobe graph: the same pairing in msprobe's model hierarchy, the faulty node matched.
    db = out / f"{fault}.vis.db"
    p = cli("graph", "-t", out / f"ms_{fault}", "-g", out / "pt", "-o", db, "-am", "-cm")
    assert f"first divergence {entry}" in p.stdout, p.stdout
    con = sqlite3.connect(db)
    try:
        (link,) = con.execute("select matched_node_link from tb_nodes where node_name = ? and "
                              "graph_id like 'NPU%'", (entry,)).fetchone()
    finally:
        con.close()
    assert link and json.loads(link)[-1] == golden, f"{entry} matched {link} in {db}"


def test_layer_mapping_names_the_diverging_layer_norm(twin, cli):
    """Under -lm the MindSpore LayerNorm cell (two casts and the layer_norm primitive) pairs with
    PyTorch's LayerNorm module, its calls with nothing: the cell is judged as a whole, and with the
    wrong eps its verdict "diverges" is the first divergence, at the primitive that made it."""
    out, _ = twin
    clean, _ = compare(cli, out, "ms_clean", "lm_clean", ("-lm",))
    assert clean["first_divergence"] is None, clean["first_divergence"]
    # The attention cells call PyTorch's APIs under MindSpore names (Mint.transpose for
    # Torch.transpose): compared under -am's names, that is no other implementation; the
    # LayerNorm cells (casts and a primitive against one functional call) are.
    modules = {d["module"] for d in clean["implementations"]}
    assert modules and all(".LayerNorm." in m for m in modules), sorted(modules)
    pair, _ = compare(cli, out, "ms_ln_eps", "lm_ln_eps", ("-lm",))
    cell = f"Cell.blocks.{C.FAULTY_BLOCK}.ln2.LayerNorm.forward.0"
    (norm,) = [d for d in pair["implementations"] if d["module"] == cell]
    assert norm["verdict"] == "diverges", norm
    fd = pair["first_divergence"]
    assert fd is not None and fd["module"] == cell, fd
    assert fd["entry"] == f"Primitive.layer_norm.LayerNorm.{2 * C.FAULTY_BLOCK + 1}.forward", fd
