"""What the two halves of the MindSpore/PyTorch twin share (numpy only, importable by either venv).

The same GPT-style model is written twice: gpt_twin_ms.py (MindSpore, PyNative) and gpt_twin_pt.py
(PyTorch). The PyTorch script draws the weights and the batch and writes them, one `.npy` file per
parameter (PyTorch's parameter name) plus `x.npy` and `y.npy`; the MindSpore script loads them, so
the two runs start from the same numbers. The two halves run in two processes because the
MindSpore venv has no torch (and the torch interpreter no MindSpore).
"""
import argparse
import json
import os
import pathlib

import numpy as np

D_IN, D, HEADS, LAYERS, D_OUT = 8, 32, 4, 2, 8
BATCH, SEQ = 2, 8
EPS = 1e-5
FAULTS = ("", "ln_eps", "gelu_tanh")
# The faulty run changes one op of the last block: its second LayerNorm's eps, or its GELU.
FAULTY_BLOCK = LAYERS - 1
FAULTY_EPS = 1e-2


def block_eps(i, fault):
    return FAULTY_EPS if fault == "ln_eps" and i == FAULTY_BLOCK else EPS


def block_gelu(i, fault):
    return "tanh" if fault == "gelu_tanh" and i == FAULTY_BLOCK else "none"


def causal_mask():
    """True where a position may not attend (above the diagonal)."""
    return np.triu(np.ones((SEQ, SEQ), dtype=bool), k=1)


def save_arrays(directory, arrays):
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", np.ascontiguousarray(a, dtype=np.float32))


def load_array(directory, name):
    path = pathlib.Path(directory) / f"{name}.npy"
    if not path.exists():
        raise SystemExit(f"{path}: missing (run gpt_twin_pt.py --weights {directory} first)")
    return np.load(path)


def parse_args(doc):
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--weights", required=True, help="directory of the shared .npy weights and batch")
    p.add_argument("--out", required=True, help="dump_path of the capture")
    p.add_argument("--fault", default="", choices=FAULTS)
    p.add_argument("--level", default="mix", choices=("L0", "L1", "mix"))
    p.add_argument("--task", default="statistics", choices=("statistics", "tensor"))
    p.add_argument("--steps", type=int, default=1)
    return p.parse_args()


def write_config(args):
    path = os.path.join(args.out + ".config.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"task": args.task, "dump_path": args.out, "level": args.level}, f)
    return path
